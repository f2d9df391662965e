// Benchmark of the payment callback over real HTTP (not a test: it asserts nothing but that every
// answer was the expected one). Starts the service on a fresh PostgreSQL database, which it creates
// and drops, creates a tenant and invoices, then drives two scenarios with autocannon:
//   unique      every request a new notification (a new transaction_id) for one of the invoices;
//   duplicates  the same, already received notification again and again.
// Prints requests/s, p50/p99 latency, and how many events each scenario stored: one per request
// for `unique`, none for `duplicates` (every answer was then `duplicate`).
//
//   npx tsx scripts/bench-callback.ts
//   BENCH_DATABASE_URL=postgres://user@host:5432/postgres BENCH_SECONDS=10 BENCH_CONNECTIONS=50 BENCH_INVOICES=200 npx tsx scripts/bench-callback.ts
import { randomBytes } from 'node:crypto';
// @ts-expect-error autocannon ships no types
import autocannonUntyped from 'autocannon';
import { count } from 'drizzle-orm';
import postgres from 'postgres';
import { loadConfig } from '../src/config.js';
import { paymentEvents } from '../src/db/schema.js';
import { createLogger } from '../src/logger.js';
import { startService } from '../src/server.js';

const maintenanceUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const invoiceCount = Number(process.env.BENCH_INVOICES ?? 200);
const ADMIN_TOKEN = 'bench-admin-token';

/** The part of autocannon's API used here. */
interface BenchOptions {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
  requests?: { setupRequest: (request: Record<string, unknown>) => Record<string, unknown> }[];
}
interface BenchResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}
const autocannon = autocannonUntyped as (options: BenchOptions & { connections: number; duration: number }) => Promise<BenchResult>;

async function withMaintenance<T>(task: (sql: postgres.Sql) => Promise<T>): Promise<T> {
  const sql = postgres(maintenanceUrl, { max: 1, onnotice: () => {} });
  try {
    return await task(sql);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

async function main() {
  const name = `pi_bench_${randomBytes(5).toString('hex')}`;
  await withMaintenance((sql) => sql.unsafe(`create database ${name}`));
  const databaseUrl = new URL(maintenanceUrl);
  databaseUrl.pathname = `/${name}`;
  const service = await startService(
    loadConfig({
      DATABASE_URL: databaseUrl.toString(),
      LISTENERS: 'integrations,admin',
      HOST: '127.0.0.1',
      INTEGRATIONS_PORT: '0',
      ADMIN_PORT: '0',
      ADMIN_TOKEN,
      LOG_LEVEL: 'silent',
      SECRET_ENCRYPTION_KEY: '00'.repeat(32),
      PAYMENT_WORKER: 'false',
    }),
    createLogger('silent'),
  );
  try {
    const admin = async (path: string, body: unknown) => {
      const response = await service.apps.admin!.inject({
        method: 'POST',
        url: `/admin/v1${path}`,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        payload: body as object,
      });
      if (response.statusCode >= 300) throw new Error(`${path}: ${response.statusCode} ${response.body}`);
      return response.json();
    };
    // No payment endpoint: invoices are created without outbound traffic.
    const { tenant, credentials } = await admin('/tenants', { name: 'Bench', slug: 'bench', gateway: 'tap' });
    const invoiceIds: string[] = [];
    for (let i = 0; i < invoiceCount; i++) {
      invoiceIds.push((await admin('/invoices', { tenant_id: tenant.id, amount: '100.00', currency: 'SAR' })).invoice.id);
    }
    const url = `${service.urls.integrations}/api/v1/payments/notify/`;
    const headers = { 'content-type': 'application/json', 'x-api-key': credentials.partner_api_key };
    const notification = (invoiceId: string, transactionId: string) =>
      JSON.stringify({
        invoice_id: invoiceId,
        transaction_id: transactionId,
        status: 'paid',
        amount: '100.00',
        currency: 'SAR',
        gateway: 'tap',
        gateway_data: { card: { brand: 'visa', last4: '4242' }, fee: 2.5 },
      });

    const countEvents = async () => (await service.context.db.select({ n: count() }).from(paymentEvents))[0].n;
    let sequence = 0;
    const unique = await run('unique', {
      url,
      method: 'POST',
      headers,
      requests: [
        {
          setupRequest: (request: Record<string, unknown>) => {
            sequence++;
            return { ...request, body: notification(invoiceIds[sequence % invoiceIds.length], `txn-${sequence}`) };
          },
        },
      ],
    }, countEvents);

    const repeated = notification(invoiceIds[0], 'txn-repeated');
    await fetch(url, { method: 'POST', headers, body: repeated });
    const duplicates = await run('duplicates', { url, method: 'POST', headers, body: repeated }, countEvents);

    console.log('\npayment callback, PostgreSQL, %d connections, %d s per scenario, %d invoices', connections, seconds, invoiceCount);
    console.table([unique, duplicates]);
  } finally {
    // autocannon drops its connections mid-request at the end of a run; let those handlers finish.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await service.close();
    await withMaintenance((sql) => sql.unsafe(`drop database if exists ${name} with (force)`));
  }
}

/** Runs one autocannon scenario; `stored` says how many events it added, to check the answers. */
async function run(scenario: string, options: BenchOptions, countEvents: () => Promise<number>) {
  const before = await countEvents();
  const result = await autocannon({ ...options, connections, duration: seconds });
  return {
    scenario,
    'requests/s': Math.round(result.requests.average),
    'p50 ms': result.latency.p50,
    'p99 ms': result.latency.p99,
    requests: result.requests.total,
    'non-2xx': result.non2xx,
    errors: result.errors + result.timeouts,
    'events stored': (await countEvents()) - before,
  };
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
