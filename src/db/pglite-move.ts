// The move of a DATA_DIR written by PGlite (the embedded engine of earlier releases) to the
// embedded PostgreSQL server, once, at the first start of this release.
//
// PGlite's cluster lay in DATA_DIR itself. Its files are first moved aside, into PGLITE_DIR_NAME
// (pgliteFilesMovedAside), and the new server is initialised beside them. Once the migrations have
// made the schema on the new server, the rows are copied through both engines, table by table,
// with the columns both sides have, in one transaction; then every table's row count is compared,
// and only then is the move marked done. Until that mark, each start begins the move again on a
// new cluster; the PGlite files are kept after it, for the operator to delete.
import { existsSync, mkdirSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import postgres from 'postgres';
import type { Logger } from '../logger.js';
import { postgresConnection } from './url.js';

export const PGLITE_DIR_NAME = 'pglite-data';
const MOVED_MARK = 'MOVED-TO-POSTGRESQL';
/** The schema whose rows move; pg-boss's waiting payment requests move to payment_requests (PENDING_JOBS). */
const SCHEMAS = ['public'];

/** The payment requests earlier releases left waiting in pg-boss's queue, latest attempt of each invoice. */
const PENDING_JOBS = `
  select distinct on (data->>'invoice_id') json_build_object(
           'invoice_id', data->>'invoice_id', 'attempt', (data->>'attempt')::int,
           'due_at', start_after, 'enqueued_at', created_on)::text as job
    from pgboss.job where name = 'payment-request' and state::text in ('created', 'retry', 'active')
   order by data->>'invoice_id', (data->>'attempt')::int desc`;

/** PENDING_JOBS as rows of payment_requests (the invoices' rows are there already). */
const STORE_PENDING_JOBS = `
  with stored as (
    insert into payment_requests (invoice_id, tenant_id, mode, attempt, due_at, enqueued_at)
    select j.invoice_id, i.tenant_id, i.mode, j.attempt, j.due_at, j.enqueued_at
      from json_to_recordset($1::text::json) as j(invoice_id uuid, attempt int, due_at timestamptz, enqueued_at timestamptz)
      join invoices i on i.id = j.invoice_id
    on conflict (invoice_id) do nothing
    returning 1
  )
  select count(*)::int as n from stored`;
const ROWS_PER_BATCH = 5000;

/** What a PostgreSQL data directory holds at its top, as PGlite left it in DATA_DIR. */
const CLUSTER_ENTRY = /^(PG_VERSION|base|global|pg_\w+(\.conf)?|postgresql(\.auto)?\.conf|postmaster\.\w+)$/;

/**
 * Moves PGlite's cluster out of the way when DATA_DIR holds one, and tells whether a move is
 * pending: the directory of PGlite's files until their rows are on the new server, else null.
 * PG_VERSION goes last, so an interrupted rename is finished by the next start.
 */
export function pgliteFilesMovedAside(dataDir: string, logger: Logger): string | null {
  const pgliteDir = path.join(dataDir, PGLITE_DIR_NAME);
  if (existsSync(path.join(dataDir, 'PG_VERSION'))) {
    mkdirSync(pgliteDir, { recursive: true, mode: 0o700 });
    const entries = readdirSync(dataDir).filter((name) => CLUSTER_ENTRY.test(name) && name !== 'PG_VERSION');
    for (const name of [...entries, 'PG_VERSION']) renameSync(path.join(dataDir, name), path.join(pgliteDir, name));
    logger.warn(
      { data_dir: dataDir, pglite_dir: pgliteDir },
      'DATA_DIR holds a PGlite database (earlier releases): moving it to the embedded PostgreSQL server',
    );
  }
  return existsSync(path.join(pgliteDir, 'PG_VERSION')) && !existsSync(path.join(pgliteDir, MOVED_MARK))
    ? pgliteDir
    : null;
}

interface TableCounts {
  [table: string]: { pglite: number; postgresql: number };
}

/** A statement on one side; `Row` is what it returns, which neither driver knows. */
type Query = <Row = Record<string, unknown>>(text: string, values?: unknown[]) => Promise<Row[]>;

/** Base tables and partitioned parents (a partition's rows are read through its parent). */
const TABLES_SQL = `
  select n.nspname as schema, c.relname as name
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
   where c.relkind in ('r', 'p') and not c.relispartition and n.nspname = any($1)
   order by 1, 2`;

const COLUMNS_SQL = `
  select attname as name from pg_attribute
   where attrelid = $1::regclass and attnum > 0 and not attisdropped and attgenerated = ''
   order by attnum`;

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`;

/**
 * Copies every row of `pgliteDir` into the server at `url`, whose schema the migrations have
 * just made; marks the move done once each table has as many rows on both sides.
 */
export async function moveFromPglite(pgliteDir: string, url: string, logger: Logger): Promise<void> {
  if (existsSync(path.join(pgliteDir, MOVED_MARK))) return;
  const started = Date.now();
  // Loaded only for the move: nothing else uses PGlite any more.
  const { PGlite } = await import('@electric-sql/pglite');
  const pglite = await PGlite.create(pgliteDir);
  const connection = postgresConnection(url);
  const sql = postgres(connection.url, { path: connection.path, max: 1, onnotice: () => {} });
  try {
    const fromPglite: Query = async <Row>(text: string, values?: unknown[]) =>
      (await pglite.query<Row>(text, values)).rows;
    const tables = await fromPglite<{ schema: string; name: string }>(TABLES_SQL, [SCHEMAS]);
    const counts: TableCounts = {};
    await sql.begin(async (tx) => {
      const toServer: Query = async <Row>(text: string, values: unknown[] = []) =>
        [...(await tx.unsafe(text, values as never[]))] as Row[];
      // Rows in any order: foreign keys and triggers are not checked while they arrive.
      await toServer('set local session_replication_role = replica');
      for (const { schema, name } of tables) {
        const table = `${quoted(schema)}.${quoted(name)}`;
        const present = await toServer(`select to_regclass($1) as oid`, [table]);
        if (!present[0].oid) {
          logger.warn({ table }, 'PGlite table unknown to this release: not moved');
          continue;
        }
        const theirs = new Set((await toServer<{ name: string }>(COLUMNS_SQL, [table])).map((column) => column.name));
        const columns = (await fromPglite<{ name: string }>(COLUMNS_SQL, [table]))
          .map((c) => c.name)
          .filter((c) => theirs.has(c));
        const list = columns.map(quoted).join(', ');
        // Batches in physical order, each from where the last ended (a range scan, not an offset).
        for (let after = '(0,0)'; ; ) {
          // As JSON text, through both engines: numbers keep their digits, bytea its hex.
          const rows = await fromPglite<{ at: string; row: string }>(
            `select ctid::text as at, row_to_json(t)::text as row from ${table} t
              where ctid > $1::tid order by ctid limit ${ROWS_PER_BATCH}`,
            [after],
          );
          if (rows.length === 0) break;
          after = rows.at(-1)!.at;
          await toServer(
            `insert into ${table} (${list}) select ${list} from json_populate_recordset(null::${table}, $1::text::json)
             on conflict do nothing`,
            [`[${rows.map((row) => row.row).join(',')}]`],
          );
        }
        const [before] = await fromPglite<{ n: number }>(`select count(*)::int as n from ${table}`);
        const [after] = await toServer<{ n: number }>(`select count(*)::int as n from ${table}`);
        counts[`${schema}.${name}`] = { pglite: before.n, postgresql: after.n };
      }
      const [queue] = await fromPglite<{ oid: string | null }>(`select to_regclass('pgboss.job')::text as oid`);
      if (queue.oid) {
        const jobs = await fromPglite<{ job: string }>(PENDING_JOBS);
        const [moved] = await toServer<{ n: number }>(STORE_PENDING_JOBS, [
          `[${jobs.map((row) => row.job).join(',')}]`,
        ]);
        counts['pgboss.job → payment_requests'] = { pglite: jobs.length, postgresql: moved.n };
      }
      const unequal = Object.entries(counts).filter(([, count]) => count.pglite !== count.postgresql);
      if (unequal.length > 0) {
        throw new Error(`moving the PGlite data: row counts differ, nothing kept: ${JSON.stringify(unequal)}`);
      }
    });
    writeFileSync(path.join(pgliteDir, MOVED_MARK), `${JSON.stringify({ at: new Date().toISOString(), counts })}\n`, {
      mode: 0o600,
    });
    const rows = Object.values(counts).reduce((sum, count) => sum + count.postgresql, 0);
    logger.warn(
      { pglite_dir: pgliteDir, tables: Object.keys(counts).length, rows, ms: Date.now() - started, counts },
      `PGlite data moved to the embedded PostgreSQL server, row counts equal in every table; ` +
        `the PGlite files stay in ${pgliteDir}: delete them once you no longer need them`,
    );
  } finally {
    await sql.end({ timeout: 5 });
    await pglite.close();
  }
}
