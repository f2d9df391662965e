// Online logical backups, taken over the service's own database connection, so they work the same
// on the embedded server and on an external PostgreSQL (no pg_dump needed): one REPEATABLE READ
// READ ONLY transaction (one snapshot: every table as of the same instant, while the service keeps
// serving) streams every table of the public schema in COPY's text format, parents before the
// tables referencing them, and of release 1.0.0's queued payment requests while it runs. The file
// (docs/operations.md):
//
//   {"format":"partner-integrations-backup",...}     header: format, migrations, time
//   {"table":"public.tenants","columns":[...]}       a section per table, then its COPY text rows
//   ...rows, one a line...
//   \.
//   {"end":true,"rows":{"public.tenants":3,...}}     trailer: rows per table (a cut file has none)
//
// A restore goes into an empty database: it applies this release's migrations (expand-only, so a
// backup of an older release loads into the columns it names), loads every section in one
// transaction in file order, checks each table's row count against the trailer, and only then commits.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { DatabaseHandle, TransactionSql } from '../db/client.js';
import { statement } from '../db/statements.js';
import { migrationsDir } from '../paths.js';

export const BACKUP_FORMAT = 'partner-integrations-backup';
const FORMAT_VERSION = 1;
const END_OF_ROWS = '\\.';

interface BackupHeader {
  format: typeof BACKUP_FORMAT;
  format_version: number;
  /** Migrations applied to the database backed up, and the last one's name. */
  migrations: number;
  last_migration: string;
  taken_at: string;
  /**
   * Fingerprints of the encryption keys that open the signing secrets in the backup (see
   * `keyFingerprint` in src/tenants/secret-box.ts): what the restored service will need. Absent
   * from backups of 1.0.0.
   */
  sealed_with?: string[];
}

interface Section {
  table: string;
  columns: string[];
}

export interface BackupSummary {
  tables: number;
  rows: Record<string, number>;
  bytes: number;
  migrations: number;
  /** The header's `sealed_with`; null for a backup that does not say. */
  sealedWith: string[] | null;
}

export class BackupError extends Error {}

/** Rows fetched at a time by the backup's cursors. */
const ROWS_PER_READ = 1000;

/** A value in COPY's text format: `\N` for null; backslash, tab, newline and return escaped. */
function copyText(value: string | null): string {
  if (value === null) return '\\N';
  return value.replace(/[\\\t\n\r]/g, (character) => COPY_ESCAPES[character]);
}
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`;
const qualified = (table: string) => table.split('.').map(quoted).join('.');

/** This release's migrations, in order (drizzle's journal). */
function knownMigrations(): string[] {
  const journal = JSON.parse(readFileSync(path.join(migrationsDir, 'meta/_journal.json'), 'utf8'));
  return journal.entries.map((entry: { tag: string }) => entry.tag);
}

/**
 * Release 1.0.0's payment requests not yet moved to payment_requests (pg-boss's jobs not done,
 * while an instance of it runs): what a restore must not lose. A restore moves them.
 */
const QUEUED_JOBS = {
  table: 'pgboss.job',
  where: "where name = 'payment-request' and state in ('created', 'retry', 'active')",
};

/** Loads a backup's QUEUED_JOBS as payment requests, keeping their attempt and due time. */
const RESTORE_QUEUED_JOBS = `
  insert into payment_requests (invoice_id, tenant_id, mode, attempt, due_at, enqueued_at)
  select distinct on (j.invoice_id) j.invoice_id, i.tenant_id, i.mode, j.attempt, j.start_after, j.created_on
    from (select (data::jsonb->>'invoice_id')::uuid as invoice_id, (data::jsonb->>'attempt')::int as attempt,
                 start_after::timestamptz as start_after, created_on::timestamptz as created_on
            from restored_jobs) j
    join invoices i on i.id = j.invoice_id
   order by j.invoice_id, j.attempt desc
  on conflict (invoice_id) do nothing`;

/**
 * The public schema's tables, each after every table it references (foreign keys), so that a
 * restore loading them in this order never breaks a constraint.
 */
async function tablesInLoadOrder(tx: TransactionSql): Promise<string[]> {
  const tables: { name: string }[] = await tx.unsafe(
    `select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'public' and c.relkind in ('r', 'p') and not c.relispartition order by c.relname`,
  );
  const references: { child: string; parent: string }[] = await tx.unsafe(
    `select c.relname as child, p.relname as parent from pg_constraint k
       join pg_class c on c.oid = k.conrelid join pg_class p on p.oid = k.confrelid
       join pg_namespace n on n.oid = c.relnamespace
      where k.contype = 'f' and n.nspname = 'public' and c.oid <> p.oid`,
  );
  const ordered: string[] = [];
  const visit = (name: string, path: string[]) => {
    if (ordered.includes(name)) return;
    if (path.includes(name)) throw new BackupError(`foreign keys form a cycle: ${[...path, name].join(' → ')}`);
    for (const { parent } of references.filter((reference) => reference.child === name)) visit(parent, [...path, name]);
    ordered.push(name);
  };
  for (const { name } of tables) visit(name, []);
  return ordered.map((name) => `public.${name}`);
}

async function columnsOf(tx: TransactionSql, table: string): Promise<string[]> {
  const [schema, name] = table.split('.');
  const rows: { column_name: string }[] = await tx.unsafe(
    `select column_name from information_schema.columns
      where table_schema = $1 and table_name = $2 and is_generated = 'NEVER' order by ordinal_position`,
    [schema, name],
  );
  return rows.map((row) => row.column_name);
}

/** How long a backup waits for its reader to take more: past it, the backup is abandoned. */
const STALLED_READER_MS = 60_000;

/**
 * Writes `text` to `out`, waiting while it is full: a slow client slows the backup, never the heap.
 * Rejects once the reader has gone or has stopped reading: the snapshot's transaction then ends
 * and frees its connection.
 */
async function write(out: Writable, text: string | Buffer): Promise<void> {
  // The reader gone (a client that disconnected): its stream is destroyed, and would emit nothing more.
  if (out.destroyed) throw new BackupError('the backup stream closed before the end');
  if (out.write(text)) return;
  await new Promise<void>((resolve, reject) => {
    const done = (error?: Error) => {
      clearTimeout(stalled);
      out.off('drain', done);
      out.off('error', done);
      out.off('close', closed);
      error ? reject(error) : resolve();
    };
    const closed = () => done(new BackupError('the backup stream closed before the end'));
    // A reader that stops reading would hold the snapshot's connection for as long as it likes.
    const stalled = setTimeout(
      () => done(new BackupError(`the backup's reader read nothing for ${STALLED_READER_MS / 1000} s`)),
      STALLED_READER_MS,
    );
    out.once('drain', done);
    out.once('error', done);
    out.once('close', closed);
    if (out.destroyed) closed();
  });
}

/**
 * Streams a consistent backup of the database into `out` (which it does not end); `sealedWith`
 * names the keys its signing secrets need.
 */
export async function writeBackup(handle: DatabaseHandle, out: Writable, sealedWith: string[]): Promise<BackupSummary> {
  const summary: BackupSummary = { tables: 0, rows: {}, bytes: 0, migrations: 0, sealedWith };
  const emit = async (text: string | Buffer) => {
    summary.bytes += text.length;
    await write(out, text);
  };
  await handle.driverTransaction('isolation level repeatable read read only', async (tx) => {
    const applied: { count: number }[] = await tx.unsafe(
      'select count(*)::int as count from drizzle.__drizzle_migrations',
    );
    summary.migrations = applied[0].count;
    const header: BackupHeader = {
      format: BACKUP_FORMAT,
      format_version: FORMAT_VERSION,
      migrations: summary.migrations,
      last_migration: knownMigrations()[summary.migrations - 1] ?? 'unknown',
      taken_at: new Date().toISOString(),
      sealed_with: sealedWith,
    };
    await emit(`${JSON.stringify(header)}\n`);
    const [{ queued }]: { queued: boolean }[] = await tx.unsafe(
      "select to_regclass('pgboss.job') is not null as queued",
    );
    const sources = [
      ...(await tablesInLoadOrder(tx)).map((table) => ({ table, where: '' })),
      ...(queued ? [QUEUED_JOBS] : []),
    ];
    for (const { table, where } of sources) {
      const columns = await columnsOf(tx, table);
      const section: Section = { table, columns };
      await emit(`${JSON.stringify(section)}\n`);
      let rows = 0;
      // Each value as its type's text output, escaped as COPY's text format escapes it: the very
      // lines `COPY ... TO STDOUT` would send. Read through a cursor rather than COPY TO, whose
      // stream in postgres.js can leave the connection paused at its end (porsager/postgres#917).
      const select = `select ${columns.map((column) => `${quoted(column)}::text`).join(', ')} from ${qualified(table)} ${where}`;
      for await (const batch of tx.unsafe(select).values().cursor(ROWS_PER_READ) as AsyncIterable<
        (string | null)[][]
      >) {
        await emit(batch.map((values) => `${values.map(copyText).join('\t')}\n`).join(''));
        rows += batch.length;
      }
      await emit(`${END_OF_ROWS}\n`);
      summary.rows[table] = rows;
      summary.tables++;
    }
  });
  await emit(`${JSON.stringify({ end: true, rows: summary.rows })}\n`);
  return summary;
}

/** Reads lines one at a time from a backup file's stream. */
class LineReader {
  private buffered = '';
  private readonly chunks: AsyncIterator<string>;

  constructor(input: Readable) {
    input.setEncoding('utf8');
    this.chunks = input[Symbol.asyncIterator]();
  }

  /** The next line without its newline, or null at the end. */
  async next(): Promise<string | null> {
    for (;;) {
      const newline = this.buffered.indexOf('\n');
      if (newline >= 0) {
        const line = this.buffered.slice(0, newline);
        this.buffered = this.buffered.slice(newline + 1);
        return line;
      }
      const chunk = await this.chunks.next();
      if (chunk.done) {
        const rest = this.buffered;
        this.buffered = '';
        return rest === '' ? null : rest;
      }
      this.buffered += chunk.value;
    }
  }
}

function parseLine<T>(line: string | null, what: string): T {
  if (line === null) throw new BackupError(`the backup ends before its ${what}: the file is incomplete`);
  try {
    return JSON.parse(line) as T;
  } catch {
    throw new BackupError(`the backup's ${what} is not readable: not a ${BACKUP_FORMAT} file, or a damaged one`);
  }
}

/** Whether the database has never been migrated: the only kind a backup is restored into. */
export async function isEmptyDatabase(handle: DatabaseHandle): Promise<boolean> {
  const [schema] = await handle.run(SCHEMA_PRESENT, []);
  return !schema.migrated && !schema.tables;
}

const SCHEMA_PRESENT = statement<[], { migrated: boolean; tables: boolean }>(
  "select to_regclass('drizzle.__drizzle_migrations') is not null as migrated, to_regclass('public.tenants') is not null as tables",
);

/**
 * Restores a backup from `input` into an empty database. `prepare` creates this release's schema
 * (the migrations) once the header has been checked. All or nothing: one transaction.
 */
export async function restoreBackup(
  handle: DatabaseHandle,
  input: Readable,
  prepare: () => Promise<void>,
): Promise<BackupSummary> {
  const lines = new LineReader(input);
  const header = parseLine<BackupHeader>(await lines.next(), 'header');
  if (header.format !== BACKUP_FORMAT || header.format_version !== FORMAT_VERSION) {
    throw new BackupError(`not a ${BACKUP_FORMAT} file of version ${FORMAT_VERSION}`);
  }
  const known = knownMigrations();
  if (header.migrations > known.length || known[header.migrations - 1] !== header.last_migration) {
    throw new BackupError(
      `the backup was taken at migration ${header.last_migration}, which this release does not know: restore it with that release or a newer one`,
    );
  }
  if (!(await isEmptyDatabase(handle))) {
    throw new BackupError(
      'a backup is restored into an empty database: this one holds a schema already (a restore that failed ' +
        'leaves its schema: empty DATA_DIR, or drop and create the database, then try again)',
    );
  }
  await prepare();
  const summary: BackupSummary = {
    tables: 0,
    rows: {},
    bytes: 0,
    migrations: header.migrations,
    sealedWith: header.sealed_with ?? null,
  };
  await handle.driverTransaction('isolation level read committed', async (tx) => {
    for (;;) {
      const record = parseLine<Partial<Section> & { end?: boolean; rows?: Record<string, number> }>(
        await lines.next(),
        'next table or its end record',
      );
      if (record.end) {
        for (const [table, rows] of Object.entries(record.rows ?? {})) {
          if (summary.rows[table] !== rows) {
            throw new BackupError(`${table}: ${summary.rows[table] ?? 0} rows loaded, the backup says ${rows}`);
          }
        }
        break;
      }
      const { table, columns } = record as Section;
      let rows = 0;
      async function* sectionRows() {
        for (;;) {
          const line = await lines.next();
          if (line === null) throw new BackupError(`the backup ends inside ${table}: the file is incomplete`);
          if (line === END_OF_ROWS) return;
          rows++;
          yield `${line}\n`;
        }
      }
      await loadSection(tx, { table, columns }, sectionRows);
      summary.rows[table] = rows;
      summary.tables++;
    }
    await resetSequences(tx);
  });
  return summary;
}

/** Copies a section's rows into its table; release 1.0.0's queued jobs become payment requests. */
async function loadSection(tx: TransactionSql, { table, columns }: Section, rows: () => AsyncGenerator<string>) {
  const queuedJobs = table === QUEUED_JOBS.table;
  if (queuedJobs) {
    await tx.unsafe(
      `create temporary table restored_jobs (${columns.map((c) => `${quoted(c)} text`).join(', ')}) on commit drop`,
    );
  }
  const target = await tx
    .unsafe(`copy ${queuedJobs ? 'restored_jobs' : qualified(table)} (${columns.map(quoted).join(', ')}) from stdin`)
    .writable();
  await pipeline(rows, target);
  if (queuedJobs) await tx.unsafe(RESTORE_QUEUED_JOBS);
}

/** Sequences behind serial and identity columns continue after the rows loaded. */
async function resetSequences(tx: TransactionSql): Promise<void> {
  const owned: { sequence: string; table: string; column: string }[] = await tx.unsafe(
    `select s.oid::regclass::text as sequence, t.oid::regclass::text as table, a.attname as column
       from pg_class s join pg_depend d on d.objid = s.oid and d.deptype in ('a', 'i')
       join pg_class t on t.oid = d.refobjid join pg_attribute a on a.attrelid = t.oid and a.attnum = d.refobjsubid
      where s.relkind = 'S'`,
  );
  for (const { sequence, table, column } of owned) {
    await tx.unsafe(
      `select setval($1::regclass, coalesce((select max(${quoted(column)}) from ${table}), 0) + 1, false)`,
      [sequence],
    );
  }
}
