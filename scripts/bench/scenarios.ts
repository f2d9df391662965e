// What the benchmark measures: the fixtures (through the admin API, as an operator would make
// them), the scenarios on the real service, and each one's ceiling measured in the same run.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { auditEventRecord } from '../../src/audit/index.js';
import {
  type AcceptedNotification,
  CREATE_INVOICE,
  type InvoiceLookup,
  plannedMoves,
  READ_STATEMENT,
  STORE_STATEMENT,
} from '../../src/payments/index.js';
import {
  type AdminClient,
  inParallel,
  type LoadSpec,
  notificationBody,
  type ScenarioLoad,
  type ThrowawayDatabase,
} from './lib.js';

/** Invoices for unique notifications: the load cycles through them (see `uniqueCallbacks`). */
const UNIQUE_INVOICES = 5000;
/** Invoices whose notification is stored once, then repeated by the duplicates scenario. */
const DUPLICATE_INVOICES = 1000;
/** The pgbench ceiling's own invoices (ids 00000000-0000-4000-8000-<n>, see callbackScript). */
const PGBENCH_INVOICES = 10_000;

const AMOUNT = '100.00';
const CURRENCY = 'SAR';
const GATEWAY = 'tap';
const NOTIFICATION = { status: 'paid', amount: AMOUNT, currency: CURRENCY, gateway: GATEWAY };

export interface Urls {
  integrations: string;
  backend: string;
  admin: string;
}

export interface Fixtures {
  tenantId: string;
  /** A tenant with a payment endpoint: each invoice of the creation scenario enqueues a payment request. */
  invoiceTenantId: string;
  ssoSecret: string;
  partnerApiKey: string;
  backendKey: string;
  saudiArabiaId: string;
  uniqueInvoiceIds: string[];
  duplicateInvoiceIds: string[];
}

export async function createFixtures(admin: AdminClient): Promise<Fixtures> {
  // No payment endpoint: creating an invoice makes no outbound call.
  const { tenant, credentials } = await admin.request<{
    tenant: { id: string };
    credentials: { sso_hmac_secret: string; partner_api_key: string };
  }>('POST', '/tenants', {
    name: 'Bench',
    slug: 'bench',
    gateway: GATEWAY,
  });
  const { key: backendKey } = await admin.request<{ key: string }>('POST', '/partner-keys', {
    name: 'bench',
    scopes: ['countries:read', 'cities:read'],
  });
  const saudiArabiaId = (await admin.request<{ country: { id: string } }>('GET', '/countries/SA')).country.id;
  // Supported cities with attractions, so listings carry some has_attractions data.
  const { cities } = await admin.request<{ cities: { id: string; name: string }[] }>(
    'GET',
    '/cities?name=a&country=SA',
  );
  for (const city of cities.slice(0, 10)) {
    await admin.request('PATCH', `/cities/${city.id}`, { supported: true });
    await admin.request('POST', `/cities/${city.id}/attractions`, { name: `Old town of ${city.name}` });
  }
  // Its payment requests wait: the service measured runs no worker (the delivery has scenarios of its own).
  const { tenant: invoiceTenant } = await admin.request<{ tenant: { id: string } }>('POST', '/tenants', {
    name: 'Bench invoices',
    slug: 'bench-invoices',
    gateway: GATEWAY,
    payment_endpoint_url: 'http://127.0.0.1:9/pay',
  });
  const invoiceIds = await inParallel(UNIQUE_INVOICES + DUPLICATE_INVOICES, 8, async () => {
    const { invoice } = await admin.request<{ invoice: { id: string } }>('POST', '/invoices', {
      tenant_id: tenant.id,
      amount: AMOUNT,
      currency: CURRENCY,
    });
    return invoice.id;
  });
  return {
    tenantId: tenant.id,
    invoiceTenantId: invoiceTenant.id,
    ssoSecret: credentials.sso_hmac_secret,
    partnerApiKey: credentials.partner_api_key,
    backendKey,
    saudiArabiaId,
    uniqueInvoiceIds: invoiceIds.slice(0, UNIQUE_INVOICES),
    duplicateInvoiceIds: invoiceIds.slice(UNIQUE_INVOICES),
  };
}

const callbackHeaders = (fixtures: Fixtures) => ({
  'x-api-key': fixtures.partnerApiKey,
  'content-type': 'application/json',
});

/**
 * Unique notifications: each request a new transaction id for the next invoice in turn. Most
 * invoices get one `paid` (as in production, one payment per invoice); after the first pass an
 * invoice gets another `paid` with a new transaction id, which is still a new event that updates
 * the invoice (gateway_reference), so every request runs the whole write path.
 */
function uniqueCallbacks(fixtures: Fixtures, prefix: string): LoadSpec['callbacks'] {
  return { invoiceIds: fixtures.uniqueInvoiceIds, template: NOTIFICATION, transactionIds: 'per-request', prefix };
}

/** Retries of stored notifications, spread over many invoices (a retry storm, not one hot row). */
function duplicateCallbacks(fixtures: Fixtures): LoadSpec['callbacks'] {
  return {
    invoiceIds: fixtures.duplicateInvoiceIds,
    template: NOTIFICATION,
    transactionIds: 'per-invoice',
    prefix: 'dup-',
  };
}

/** Stores the notification of each duplicates invoice once, so that the scenario only repeats them. */
export async function primeDuplicates(urls: Urls, fixtures: Fixtures): Promise<void> {
  await inParallel(fixtures.duplicateInvoiceIds.length, 8, async (index) => {
    const invoiceId = fixtures.duplicateInvoiceIds[index];
    const response = await fetch(`${urls.integrations}/api/v1/payments/notify/`, {
      method: 'POST',
      headers: callbackHeaders(fixtures),
      body: notificationBody(NOTIFICATION, invoiceId, `dup-${invoiceId}`),
    });
    const body = await response.text();
    if (body !== '{"status":"success"}') throw new Error(`priming duplicates: ${response.status} ${body}`);
  });
}

/** The pgbench ceiling's invoices, and for the duplicates script one stored event each. */
export async function createPgbenchFixtures(database: ThrowawayDatabase, fixtures: Fixtures): Promise<void> {
  const invoiceId = `('00000000-0000-4000-8000-' || lpad(n::text, 12, '0'))::uuid`;
  await database.sql(
    `insert into invoices (id, tenant_id, amount, currency)
     select ${invoiceId}, '${fixtures.tenantId}', ${AMOUNT}, '${CURRENCY}' from generate_series(1, ${PGBENCH_INVOICES}) n`,
  );
  await database.sql(
    `insert into payment_events (tenant_id, invoice_id, transaction_id, status, gateway, payload, applied, status_before, status_after)
     select '${fixtures.tenantId}', ${invoiceId}, n::text, 'paid', '${GATEWAY}', '{}', true, 'pending', 'paid' from generate_series(1, ${PGBENCH_INVOICES}) n`,
  );
  await database.sql('vacuum analyze invoices, payment_events');
}

/**
 * The parameters the service sends with its statements for NOTIFICATION (src/payments/callback.ts),
 * as pgbench variables (-D).
 */
function pgbenchDefines(fixtures: Fixtures): Record<string, string> {
  return {
    tenant: fixtures.tenantId,
    mode: 'live',
    status: NOTIFICATION.status,
    gateway: GATEWAY,
    moves: JSON.stringify(plannedMoves(NOTIFICATION.status)),
    // A payload of the size the service stores (its invoice and transaction ids are as long).
    payload: notificationBody(NOTIFICATION, '00000000-0000-4000-8000-000000000001', 'unique-0000001'),
    request_id: '00000000-0000-4000-8000-000000000000',
    invoices: String(PGBENCH_INVOICES),
  };
}

/**
 * A statement of the service (src/payments/notification-store.ts) for a group of one, its jsonb
 * group built from pgbench variables field by field, so that a field the statement takes and the
 * script lacks fails the type check. pgbench variables are numbers or text: the invoice id is
 * built from the number n (the ceiling's own invoices), the transaction id from a number.
 */
function statementForOne<Fields>(statement: string, fields: Record<keyof Fields, string>): string {
  const pairs = Object.entries<string>(fields).map(([name, value]) => `'${name}', ${value}`);
  return `${statement.replace('$1::jsonb', `jsonb_build_array(jsonb_build_object('item', 0, ${pairs.join(', ')}))`)};`;
}

/**
 * The ceiling: what the service sends for one callback, one statement after the other, nothing
 * else. A unique callback is read, then stored; a duplicate is read, and answered.
 */
function callbackScript(workDir: string, kind: 'unique' | 'duplicate'): string {
  const lookup: Record<keyof InvoiceLookup, string> = {
    tenant: ':tenant::text',
    invoice_id: `'00000000-0000-4000-8000-' || lpad(:n::text, 12, '0')`,
    mode: ':mode::text',
    // Unique: a new random transaction id each time; duplicate: the one stored for invoice n.
    transaction_id: kind === 'unique' ? ':txn::text' : ':n::text',
    status: ':status::text',
    gateway: ':gateway::text',
  };
  const accepted: Record<keyof AcceptedNotification, string> = {
    ...lookup,
    moves: ':moves::jsonb',
    payload: ':payload::text',
    request_id: ':request_id::text',
  };
  const lines = [
    '\\set n random(1, :invoices)',
    ...(kind === 'unique'
      ? [
          '\\set txn random(1000000000, 9000000000000000)',
          statementForOne(READ_STATEMENT.text, lookup),
          statementForOne(STORE_STATEMENT.text, accepted),
        ]
      : [statementForOne(READ_STATEMENT.text, lookup)]),
  ];
  const script = path.join(workDir, `callback-${kind}.sql`);
  writeFileSync(script, `${lines.join('\n')}\n`);
  return script;
}

export type Ceiling =
  | { kind: 'pgbench'; script: string; defines: Record<string, string> }
  | { kind: 'bare'; path: string; contentType: string; body: Buffer };

export interface Scenario {
  label: string;
  /** The load on the service, minus connections and duration (set by the runner). */
  load: ScenarioLoad;
  ceiling: Ceiling;
  /** The least ratio to the ceiling the targets ask for; none for scenarios without a target. */
  targetRatio?: number;
  /** The largest p50 in ms the targets ask for. */
  targetP50Ms?: number;
  /** The least rate in req/s the targets ask for. */
  targetRequestsPerSecond?: number;
  /** The most server CPU per request the targets allow, as a multiple of another scenario's (its label). */
  targetCpuWithin?: { times: number; of: string };
  /** Also load the Node floor of a callback (callback-floor.ts) with the same requests, in the same slices. */
  nodeFloor?: boolean;
}

export const CALLBACK_UNIQUE = 'payment callback, unique notifications';

/** `workDir`: where the pgbench scripts are written. */
export function callbackScenarios(urls: Urls, fixtures: Fixtures, workDir: string): Scenario[] {
  const notify = {
    url: `${urls.integrations}/api/v1/payments/notify/`,
    method: 'POST' as const,
    headers: callbackHeaders(fixtures),
  };
  const defines = pgbenchDefines(fixtures);
  return [
    {
      label: CALLBACK_UNIQUE,
      load: { ...notify, callbacks: uniqueCallbacks(fixtures, 'unique-'), expectBody: '{"status":"success"}' },
      ceiling: { kind: 'pgbench', script: callbackScript(workDir, 'unique'), defines },
      targetRatio: 0.6,
      nodeFloor: true,
    },
    {
      label: 'payment callback, duplicates',
      load: { ...notify, callbacks: duplicateCallbacks(fixtures), expectBody: '{"status":"duplicate"}' },
      ceiling: { kind: 'pgbench', script: callbackScript(workDir, 'duplicate'), defines },
    },
  ];
}

export const INVOICE_CREATION = 'invoice creation (admin API), its payment request enqueued';

/**
 * Invoices created through the admin API, as an operator's or a partner's system creates them.
 * The ceiling: pgbench running what the service sends for one creation (src/payments/invoices.ts,
 * createInvoice): CREATE_INVOICE in a transaction, with an invoice id of its own and an audit event
 * of the service's size; one creation a transaction, where the service has the creations that
 * arrive together share one. The NOTIFY that wakes workers after commits, shared by the commits of its
 * moment, is not in it.
 */
export function invoiceScenario(urls: Urls, fixtures: Fixtures, adminToken: string, workDir: string): Scenario {
  // CREATE_INVOICE's parameters, by number, as SQL.
  const parameters: Record<string, string> = {
    1: 'gen_random_uuid()',
    2: ':tenant',
    3: 'null',
    4: `'${AMOUNT}'`,
    5: `'${CURRENCY}'`,
    6: "'live'",
    7: 'null',
    8: "'tenant has no payment endpoint configured (final: not retried)'",
    9: ':audit',
    10: 'null',
    11: 'null',
  };
  const creation = CREATE_INVOICE.text.replace(/\$(\d+)/g, (_placeholder, number: string) => {
    const sql = parameters[number];
    if (sql === undefined) throw new Error(`CREATE_INVOICE's $${number} has no value in the ceiling`);
    return sql;
  });
  const audit = auditEventRecord({
    actor: 'admin',
    action: 'invoice.create',
    route: 'POST /admin/v1/invoices',
    summary: `Created invoice 00000000 (${AMOUNT} ${CURRENCY})`,
    targetType: 'invoice',
    targetLabel: `00000000 (${AMOUNT} ${CURRENCY})`,
    targetId: '00000000-0000-4000-8000-000000000000',
    fields: ['tenant_id', 'amount', 'currency'],
    status: 201,
    address: '127.0.0.1',
    requestId: '00000000-0000-4000-8000-000000000000',
    operator: { id: null, name: 'admin' },
  });
  const script = path.join(workDir, 'invoice-creation.sql');
  writeFileSync(script, `begin;\n${creation};\ncommit;\n`);
  return {
    label: INVOICE_CREATION,
    load: {
      url: `${urls.admin}/admin/v1/invoices`,
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ tenant_id: fixtures.invoiceTenantId, amount: AMOUNT, currency: CURRENCY }),
      expectBody: '{"invoice":{"id":"',
      expectBodyStart: true,
    },
    ceiling: {
      kind: 'pgbench',
      script,
      defines: { tenant: fixtures.invoiceTenantId, audit },
    },
    // Issue 36: a creation costs at most twice a callback's CPU, and a quiet machine makes 1,000 a second.
    targetRequestsPerSecond: 1000,
    targetCpuWithin: { times: 2, of: CALLBACK_UNIQUE },
  };
}

/** The half-rate run of the unique callback: fresh transaction ids again. */
export function uniqueCallbackAtRate(urls: Urls, fixtures: Fixtures, overallRate: number): ScenarioLoad {
  return {
    url: `${urls.integrations}/api/v1/payments/notify/`,
    method: 'POST',
    headers: callbackHeaders(fixtures),
    callbacks: uniqueCallbacks(fixtures, 'rate-'),
    expectBody: '{"status":"success"}',
    overallRate,
  };
}

/** The response of the real service, which its bare twin answers byte for byte. */
async function capture(url: string, headers: Record<string, string>): Promise<{ contentType: string; body: Buffer }> {
  const response = await fetch(url, { headers });
  const body = Buffer.from(await response.arrayBuffer());
  if (response.status !== 200) throw new Error(`GET ${url}: ${response.status} ${body}`);
  return { contentType: response.headers.get('content-type') ?? 'application/octet-stream', body };
}

/** Read scenarios, each with the bare route answering what the service answered. */
export async function readScenarios(urls: Urls, fixtures: Fixtures): Promise<Scenario[]> {
  const backend = { authorization: `Api-Key ${fixtures.backendKey}` };
  const read = async (
    label: string,
    url: string,
    headers: Record<string, string>,
    barePath: string,
  ): Promise<Scenario> => {
    const { contentType, body } = await capture(url, headers);
    return {
      label,
      load: { url, headers, expectBody: body.toString('utf8') },
      ceiling: { kind: 'bare', path: barePath, contentType, body },
      targetRatio: 0.7,
      targetP50Ms: 10,
    };
  };
  return [
    await read('`/v1/cities/` first page', `${urls.backend}/v1/cities/`, backend, '/cities-first/'),
    await read(
      '`/v1/cities/` name search',
      `${urls.backend}/v1/cities/?search=san`,
      backend,
      '/cities-search/?search=san',
    ),
    await read(
      '`/v1/cities/` deep page (offset 100000)',
      `${urls.backend}/v1/cities/?offset=100000`,
      backend,
      '/cities-deep/?offset=100000',
    ),
    await read(
      '`/v1/cities/` country filter',
      `${urls.backend}/v1/cities/?country=${fixtures.saudiArabiaId}`,
      backend,
      `/cities-country/?country=${fixtures.saudiArabiaId}`,
    ),
    await read(
      '`/api/v1/suggested-prompts/effective/`',
      `${urls.integrations}/api/v1/suggested-prompts/effective/?language=en`,
      { authorization: `Api-Key ${fixtures.ssoSecret}` },
      '/prompts-effective/?language=en',
    ),
    // No target: how near a bare route the service comes when a request does no work at all (no
    // auth, no database). It bounds every read ratio above.
    {
      ...(await read(
        'service `/healthz` (no auth, no database: the floor)',
        `${urls.backend}/healthz`,
        {},
        '/healthz-floor/',
      )),
      targetRatio: undefined,
      targetP50Ms: undefined,
    },
  ];
}
