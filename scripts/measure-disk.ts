// `npx tsx scripts/measure-disk.ts`: the disk taken per 100,000 invoices (each with every row its
// creation through the admin API and its delivery write: the invoice, its payment request, the one
// attempt and the operator's audit event) and per 100,000 callbacks (each a stored event that pays
// its invoice), before and after a prune; then what a partner's flood costs, 100,000 each of test invoices (with their
// attempt and payment request), pings and breaker events, before and after the prune that
// retention makes of them. On the database the environment names (DATABASE_URL, else the embedded
// one in DATA_DIR; use an empty one: the rows are written straight with SQL generate_series, and
// stay). The figures go to docs/operations.md.
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/client.js';
import { migrateDatabase } from '../src/db/migrate.js';
import { prune, retentionRules } from '../src/maintenance/index.js';

const ROWS = Number(process.env.ROWS ?? 100_000);
const config = loadConfig();
const database = await openDatabase(config);
// Statements over all the rows take longer than a request may: the request deadline is lifted.
const sql = (text: string, values: unknown[] = []) => database.withoutDeadline(() => database.executeSql(text, values));
const pruneAll = () => database.withoutDeadline(() => prune(database, retentionRules(config.retention)));

/** What creating an invoice through the admin API and delivering its payment request write. */
const INVOICE_TABLES = ['invoices', 'payment_requests', 'payment_deliveries', 'audit_events'];
const TABLES = [...INVOICE_TABLES, 'payment_events'];
/** The tables a flood fills: a test invoice's row, its attempt and its payment request, pings, breaker events. */
const FLOOD_TABLES = [
  'invoices',
  'payment_deliveries',
  'payment_requests',
  'endpoint_pings',
  'payment_endpoint_breaker_events',
];

/** Bytes on disk per table, indexes and TOAST included. */
async function sizes(): Promise<Record<string, number>> {
  const { rows } = await sql(
    `select relname as name, pg_total_relation_size(oid)::bigint as bytes from pg_class
      where relkind = 'r' and relname = any($1::text[])`,
    [`{${[...TABLES, ...FLOOD_TABLES].join(',')}}`],
  );
  return Object.fromEntries(rows.map((row) => [row.name as string, Number(row.bytes)]));
}

/**
 * What an attempt of invoice `id` sent, as payment_deliveries keeps it: the URL, the timestamp and
 * a body of paymentContext's fields and size (src/payments/delivery/deliver.ts).
 */
const SENT = `'https://partner.example/payments/requests', extract(epoch from now())::bigint,
  '{"type":"payment.requested","invoice_id":"' || id || '","amount":"100.50","currency":"SAR","gateway":"tap",'
    || '"trip_id":"' || gen_random_uuid() || '","notify_url":"https://partners.example.com/api/v1/payments/notify/",'
    || '"created_at":"' || to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '","livemode":true}'`;

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
  // leaves (what it sent and the start of the reply kept) and the operator's audit event as the
  // admin API records it, made 100 days ago so that the prune takes the attempts (audit events are
  // kept longer).
  await sql(
    `with made as (
       insert into invoices (tenant_id, amount, currency, status, payment_url, created_at, updated_at)
       select $1::uuid, (100 + n % 900)::numeric + 0.5, 'SAR', 'pending', 'https://pay.partner.example/session/' || md5(n::text),
              now() - interval '100 days', now() - interval '100 days'
         from generate_series(1, $2::int) n
       returning id, amount),
     requested as (
       insert into payment_requests (invoice_id, tenant_id, mode, attempt, state, due_at, enqueued_at, outcome)
       select id, $1::uuid, 'live', 1, 'done', now() - interval '100 days', now() - interval '100 days', 'delivered'
         from made),
     audited as (
       insert into audit_events (occurred_at, actor, action, target_id, fields, status, address, request_id,
                                 route, summary, target_type, target_label, changes)
       select now() - interval '100 days', 'admin token', 'invoice.create', id::text, '{tenant_id,amount,currency}',
              201, '10.0.0.1', 'req-' || md5(id::text), 'POST /admin/v1/invoices',
              'Created invoice ' || left(id::text, 8) || ' (' || amount || ' SAR)', 'invoice',
              left(id::text, 8) || ' (' || amount || ' SAR)', '[]'::jsonb
         from made)
     insert into payment_deliveries (invoice_id, attempt, attempted_at, http_status, latency_ms, response_body,
                                     request_url, webhook_timestamp, request_body)
     select id, 1, now() - interval '100 days', 200, 40 + (random() * 200)::int,
            '{"payment_url":"https://pay.partner.example/session/' || md5(id::text) || '"}',
            ${SENT}
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

  const deleted = await pruneAll();
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
      `per ${ROWS} invoices (with their payment request, one attempt and audit event each): ${mib(perInvoices)} (${INVOICE_TABLES.map((table) => `${table} ${mib(invoiced[table] - empty[table])}`).join(', ')})`,
      `per ${ROWS} callbacks: ${mib(perCallbacks)} (events ${mib(called.payment_events - invoiced.payment_events)}, invoice updates ${mib(called.invoices - invoiced.invoices)})`,
      `all ${TABLES.length} tables before the prune: ${mib(delta(called, empty, TABLES))}`,
      `after the prune (${deleted.payment_deliveries} attempts) and a vacuum: ${mib(delta(pruned, empty, TABLES))} on disk, the attempts' ${mib(pruned.payment_deliveries - compacted.payment_deliveries)} free for new rows`,
      `after VACUUM FULL: ${mib(delta(compacted, empty, TABLES))}`,
    ].join('\n'),
  );

  // Floods, written just past their retention so that the prune takes them: test invoices (each
  // with a delivered attempt and its payment request done), pings, and breaker events.
  // Compacted first, so that the flood grows the tables rather than filling what the prune above freed.
  await sql(
    'vacuum full invoices, payment_requests, payment_deliveries, endpoint_pings, payment_endpoint_breaker_events',
  );
  const beforeFlood = await sizes();
  const retention = config.retention;
  const days = (kept: number) => `${kept + 1} days`;
  await sql(
    `with made as (
       insert into invoices (tenant_id, amount, currency, status, mode, payment_url, created_at, updated_at)
       select $1::uuid, (100 + n % 900)::numeric + 0.5, 'SAR', 'pending', 'test', 'https://sandbox.partner.example/session/' || md5(n::text),
              now() - $3::interval, now() - $3::interval
         from generate_series(1, $2::int) n
       returning id),
     attempts as (
       insert into payment_deliveries (invoice_id, attempt, attempted_at, http_status, latency_ms, response_body,
                                       request_url, webhook_timestamp, request_body)
       select id, 1, now() - $3::interval, 200, 40 + (random() * 200)::int,
              '{"payment_url":"https://sandbox.partner.example/session/' || md5(id::text) || '"}',
              ${SENT}
         from made)
     insert into payment_requests (invoice_id, tenant_id, mode, attempt, state, due_at, enqueued_at, outcome)
     select id, $1::uuid, 'test', 1, 'done', now() - $3::interval, now() - $3::interval, 'delivered'
       from made`,
    [tenant.id, ROWS, days(retention.testInvoicesDays)],
  );
  await sql(
    `insert into endpoint_pings (tenant_id, endpoint_url, webhook_id, pinged_at, http_status, latency_ms)
     select $1::uuid, 'https://sandbox.partner.example/payments', 'msg_ping_' || gen_random_uuid(), now() - $3::interval, 200, 40 + (random() * 200)::int
       from generate_series(1, $2::int)`,
    [tenant.id, ROWS, days(retention.pingsDays)],
  );
  await sql(
    `insert into payment_endpoint_breaker_events (tenant_id, event, at, consecutive_failures, error)
     select $1::uuid, (array['opened', 'probe_failed', 'closed'])[1 + n % 3], now() - $3::interval, 5, 'endpoint answered HTTP 503'
       from generate_series(1, $2::int) n`,
    [tenant.id, ROWS, days(retention.breakerEventsDays)],
  );
  const flooded = await sizes();
  const floodDeleted = await pruneAll();
  await sql(
    'vacuum analyze invoices, payment_requests, payment_deliveries, endpoint_pings, payment_endpoint_breaker_events',
  );
  const floodPruned = await sizes();
  await sql(
    'vacuum full invoices, payment_requests, payment_deliveries, endpoint_pings, payment_endpoint_breaker_events',
  );
  const floodCompacted = await sizes();
  const grown = (after: Record<string, number>, table: string) => after[table] - beforeFlood[table];
  const floods = {
    test_invoices: {
      invoice_and_attempt_bytes:
        grown(flooded, 'invoices') + grown(flooded, 'payment_deliveries') + grown(flooded, 'payment_requests'),
      deleted: floodDeleted.test_invoices,
    },
    pings: { bytes: grown(flooded, 'endpoint_pings'), deleted: floodDeleted.endpoint_pings },
    breaker_events: {
      bytes: grown(flooded, 'payment_endpoint_breaker_events'),
      deleted: floodDeleted.payment_endpoint_breaker_events,
    },
  };
  const kept = (after: Record<string, number>, tables: string[]) =>
    tables.reduce((sum, table) => sum + grown(after, table), 0);
  console.log(
    JSON.stringify(
      {
        floods,
        flood_rows: ROWS,
        before: flooded,
        after_prune_and_vacuum: floodPruned,
        after_vacuum_full: floodCompacted,
      },
      null,
      2,
    ),
  );
  const perRow = (bytes: number) => `${Math.round(bytes / ROWS)} bytes each`;
  console.log(
    [
      `per ${ROWS} test invoices (a delivered attempt and a payment request each): ${mib(floods.test_invoices.invoice_and_attempt_bytes)} (${perRow(floods.test_invoices.invoice_and_attempt_bytes)})`,
      `per ${ROWS} pings: ${mib(floods.pings.bytes)} (${perRow(floods.pings.bytes)})`,
      `per ${ROWS} breaker events: ${mib(floods.breaker_events.bytes)} (${perRow(floods.breaker_events.bytes)})`,
      `the flood in our tables before the prune: ${mib(kept(flooded, FLOOD_TABLES))}`,
      `after the prune (${floods.test_invoices.deleted} test invoices, ${floods.pings.deleted} pings, ${floods.breaker_events.deleted} breaker events) and a vacuum: ${mib(kept(floodPruned, FLOOD_TABLES))} on disk, free for new rows`,
      `after VACUUM FULL: ${mib(kept(floodCompacted, FLOOD_TABLES))}`,
    ].join('\n'),
  );
} finally {
  await database.close();
}
