// `npx tsx scripts/measure-disk.ts`: the disk taken per 100,000 invoices (each with every row its
// creation through the admin API and one delivered attempt write: the invoice, its payment
// request, the attempt and the audit event) and per 100,000 callbacks (each a stored event that pays its invoice), before
// and after a prune, on the database the environment names (DATABASE_URL, else the embedded one in
// DATA_DIR; use an empty one: the rows are written straight with SQL generate_series, and stay).
// The figures go to docs/operations.md.
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/client.js';
import { migrateDatabase } from '../src/db/migrate.js';
import { prune, retentionRules } from '../src/maintenance/index.js';

const ROWS = Number(process.env.ROWS ?? 100_000);
const config = loadConfig();
const database = await openDatabase(config);
const sql = (text: string, values: unknown[] = []) => database.executeSql(text, values);

const TABLES = ['invoices', 'payment_requests', 'payment_deliveries', 'audit_events', 'payment_events'];
/** What creating and delivering an invoice writes. */
const INVOICE_TABLES = ['invoices', 'payment_requests', 'payment_deliveries', 'audit_events'];

/** Bytes on disk per table, indexes and TOAST included. */
async function sizes(): Promise<Record<string, number>> {
  const { rows } = await sql(
    `select relname as name, pg_total_relation_size(oid)::bigint as bytes from pg_class
      where relkind = 'r' and relname = any($1::text[])`,
    [`{${TABLES.join(',')}}`],
  );
  return Object.fromEntries(rows.map((row) => [row.name as string, Number(row.bytes)]));
}

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
const delta = (after: Record<string, number>, before: Record<string, number>, tables: string[]) =>
  tables.reduce((sum, table) => sum + after[table] - before[table], 0);

try {
  await migrateDatabase(database);
  const [tenant] = (
    await sql(
      `insert into tenants (slug, name, gateway) values ('disk-' || floor(random() * 1e9)::text, 'Disk', 'tap') returning id`,
    )
  ).rows;
  const empty = await sizes();

  // Invoices, each with its payment request done, the one attempt a delivered payment request
  // leaves (a reply body kept) and the operator's audit event, made 100 days ago so that the prune
  // takes the attempts.
  await sql(
    `with made as (
       insert into invoices (tenant_id, amount, currency, status, payment_url, created_at, updated_at)
       select $1::uuid, (100 + n % 900)::numeric + 0.5, 'SAR', 'pending', 'https://pay.partner.example/session/' || md5(n::text),
              now() - interval '100 days', now() - interval '100 days'
         from generate_series(1, $2::int) n
       returning id),
     requested as (
       insert into payment_requests (invoice_id, tenant_id, mode, attempt, state, due_at, enqueued_at, outcome)
       select id, $1::uuid, 'live', 1, 'done', now() - interval '100 days', now() - interval '100 days', 'delivered'
         from made),
     audited as (
       insert into audit_events (occurred_at, actor, action, target_id, fields, status, address, request_id)
       select now() - interval '100 days', 'admin token', 'POST /admin/v1/invoices', id::text,
              '{tenant_id,amount,currency}', 201, '10.0.0.1', gen_random_uuid()::text
         from made)
     insert into payment_deliveries (invoice_id, attempt, attempted_at, http_status, latency_ms, response_body)
     select id, 1, now() - interval '100 days', 200, 40 + (random() * 200)::int,
            '{"payment_url":"https://pay.partner.example/session/' || md5(id::text) || '"}'
       from made`,
    [tenant.id, ROWS],
  );
  const invoiced = await sizes();

  // Callbacks: one `paid` event per invoice, with a partner's payload, and the invoice paid.
  await sql(
    `insert into payment_events (tenant_id, invoice_id, transaction_id, status, gateway, payload, applied,
                                 status_before, status_after, request_id, received_at)
     select $1::uuid, id, 'txn_' || md5(id::text), 'paid', 'tap',
            jsonb_build_object('invoice_id', id, 'transaction_id', 'txn_' || md5(id::text), 'status', 'paid',
                               'amount', amount::text, 'currency', 'SAR', 'gateway', 'tap',
                               'metadata', jsonb_build_object('card_brand', 'VISA', 'last4', '4242')),
            true, 'pending', 'paid', 'req-' || md5(id::text), now() - interval '100 days'
       from invoices where tenant_id = $1::uuid`,
    [tenant.id],
  );
  await sql(
    `update invoices set status = 'paid', paid_at = now(), gateway_reference = 'txn_' || md5(id::text), updated_at = now()
      where tenant_id = $1::uuid`,
    [tenant.id],
  );
  await sql(`vacuum analyze ${TABLES.join(', ')}`);
  const called = await sizes();

  const deleted = await prune(database, retentionRules(config.retention));
  // What autovacuum does after a prune: the space is free for new rows, the files keep their size.
  await sql('vacuum analyze payment_deliveries');
  const pruned = await sizes();
  await sql('vacuum full payment_deliveries');
  const compacted = await sizes();

  const perInvoices = delta(invoiced, empty, INVOICE_TABLES);
  const perCallbacks = delta(called, invoiced, ['payment_events', 'invoices']);
  const figures = {
    database: config.databaseUrl ? 'postgres' : 'embedded',
    rows: ROWS,
    invoices_with_one_attempt_bytes: perInvoices,
    callbacks_bytes: perCallbacks,
    before_prune: called,
    prune_deleted: deleted,
    after_prune_and_vacuum: pruned,
    after_vacuum_full: compacted,
  };
  console.log(JSON.stringify(figures, null, 2));
  console.log(
    [
      `per ${ROWS} invoices (one attempt each): ${mib(perInvoices)} (${INVOICE_TABLES.map((table) => `${table} ${mib(invoiced[table] - empty[table])}`).join(', ')})`,
      `per ${ROWS} callbacks: ${mib(perCallbacks)} (events ${mib(called.payment_events - invoiced.payment_events)}, invoice updates ${mib(called.invoices - invoiced.invoices)})`,
      `all ${TABLES.length} tables before the prune: ${mib(delta(called, empty, TABLES))}`,
      `after the prune (${deleted.payment_deliveries} attempts) and a vacuum: ${mib(delta(pruned, empty, TABLES))} on disk, the attempts' ${mib(pruned.payment_deliveries - compacted.payment_deliveries)} free for new rows`,
      `after VACUUM FULL: ${mib(delta(compacted, empty, TABLES))}`,
    ].join('\n'),
  );
} finally {
  await database.close();
}
