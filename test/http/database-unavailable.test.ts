// A database that is away or out of space is a 503 the client may retry, in each host's own error
// body, with Retry-After; never a 500, never a request left hanging. On PostgreSQL, a real outage:
// the service reaches the database through a TCP relay the test cuts and restores.
import { tmpdir } from 'node:os';
import { DrizzleQueryError } from 'drizzle-orm/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppContext } from '../../src/context.js';
import { openDatabase } from '../../src/db/client.js';
import { buildAdminApp } from '../../src/http/admin/app.js';
import { buildBackendApp } from '../../src/http/backend/app.js';
import type { HostApp } from '../../src/http/host.js';
import { buildIntegrationsApp } from '../../src/http/integrations/app.js';
import { createLogger } from '../../src/logger.js';
import { PaymentRequests } from '../../src/payments/delivery/requests.js';
import { PaymentWorker } from '../../src/payments/delivery/worker.js';
import { createInvoice, notificationFor } from '../payments/support.js';
import { connectTo, copyTemplateDatabase, type TestDatabase } from '../support/database.js';
import { TEST_ADMIN_TOKEN } from '../support/env.js';
import { waitFor } from '../support/partner-endpoint.js';
import { Relay } from '../support/relay.js';
import { type TestTenant, useService } from '../support/service.js';

/** The database as a failing driver leaves it: every statement rejected with `cause` underneath. */
function failingDatabase(context: AppContext, cause: Error & { code: string }) {
  const fail = () => {
    throw new DrizzleQueryError('select 1', [], cause);
  };
  return new Proxy(context.db, {
    get: (target, property, receiver) =>
      ['select', 'insert', 'update', 'delete', 'transaction', 'execute'].includes(String(property))
        ? fail
        : Reflect.get(target, property, receiver),
  });
}

const CAUSES = {
  'connection refused': Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
  // The embedded server stopped: its Unix socket is gone.
  'socket missing': Object.assign(new Error('connect ENOENT /data/postgresql/.s.PGSQL.5432'), { code: 'ENOENT' }),
  'disk full': Object.assign(new Error('could not extend file "base/5/16536": No space left on device'), {
    code: '53100',
  }),
};

describe('a database that is unavailable', () => {
  const service = useService();
  let tenant: TestTenant;
  let partnerKey: string;

  beforeAll(async () => {
    tenant = await service.createTenant();
    partnerKey = (await service.admin('POST', '/partner-keys', { name: 'outage', scopes: ['countries:read'] })).json()
      .key;
  });

  it.each(Object.entries(CAUSES))(
    '%s: each host answers 503 in its own body, with Retry-After',
    async (_name, cause) => {
      const invoice = await createInvoice(service, tenant);
      const context = { ...service.context, db: failingDatabase(service.context, cause) };
      const logger = createLogger('silent');
      const apps: HostApp[] = [
        await buildIntegrationsApp(context, logger),
        await buildBackendApp(context, logger),
        await buildAdminApp(context, logger, {
          documents: { integrations: async () => ({}), backend: async () => ({}) },
        }),
      ];
      const [integrations, backend, admin] = apps;
      try {
        const answers = await Promise.all([
          integrations.inject({
            method: 'POST',
            url: '/api/v1/payments/notify/',
            headers: { 'x-api-key': tenant.credentials.partner_api_key },
            payload: notificationFor(invoice),
          }),
          integrations.inject({
            url: '/api/v1/trips/',
            headers: { authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}` },
          }),
          backend.inject({ url: '/v1/countries/', headers: { authorization: `Api-Key ${partnerKey}` } }),
          admin.inject({ url: '/admin/v1/tenants', headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } }),
        ]);
        const message = 'Service temporarily unavailable; retry shortly.';
        expect(answers.map((answer) => [answer.statusCode, answer.headers['retry-after'], answer.json()])).toEqual([
          [503, '1', { error: 'Service unavailable' }],
          [503, '1', { success: false, message, data: null, error: { code: 'SERVICE_UNAVAILABLE' } }],
          [503, '1', { detail: message }],
          [503, '1', { error: { code: 'SERVICE_UNAVAILABLE', message } }],
        ]);
      } finally {
        await Promise.all(apps.map((app) => app.close()));
      }
    },
  );
});

/** The service's DATABASE_REQUEST_TIMEOUT_MS here: short, so that the tests run quickly. */
const DEADLINE_MS = 1000;
/** What an answer may take beyond the deadline: the answer itself, on a busy machine. */
const MARGIN_MS = 1500;

async function timed(request: Promise<Response>): Promise<{ status: number; ms: number; body: unknown }> {
  const started = Date.now();
  const response = await request;
  return { status: response.status, ms: Date.now() - started, body: await response.json() };
}

describe('PostgreSQL going away and coming back', () => {
  let database: TestDatabase;
  let relay: Relay;
  const unhandled: unknown[] = [];
  const noteUnhandled = (reason: unknown) => unhandled.push(reason);
  beforeAll(async () => {
    const { inject } = await import('vitest');
    database = await copyTemplateDatabase(inject('databaseTemplate'));
    relay = new Relay(database.target.databaseUrl!);
    await relay.open();
    process.on('unhandledRejection', noteUnhandled);
  });
  afterAll(async () => {
    process.off('unhandledRejection', noteUnhandled);
    await relay?.cut().catch(() => {});
    await database?.drop();
  });
  // The service reaches its database through the relay only.
  const service = useService(() => ({
    env: { DATABASE_URL: relay.url, DATABASE_REQUEST_TIMEOUT_MS: String(DEADLINE_MS) },
  }));

  /** Waits until /readyz says ready, within `withinMs`. */
  async function readyAgain(withinMs: number): Promise<void> {
    const started = Date.now();
    while ((await fetch(`${service.urls.integrations}/readyz`)).status !== 200) {
      expect(Date.now() - started).toBeLessThan(withinMs);
    }
  }

  it('answers 503 within 2 s while it is away, again and again, and 200 as soon as it is back', async () => {
    const tenant = await service.createTenant();
    const invoice = await createInvoice(service, tenant);
    const integrations = service.urls.integrations!;
    const notification = notificationFor(invoice);
    const notify = () =>
      fetch(`${integrations}/api/v1/payments/notify/`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': tenant.credentials.partner_api_key },
        body: JSON.stringify(notification),
      });
    await relay.cut();
    // Repeated failures are what made postgres.js wait longer and longer before connecting again.
    for (let round = 0; round < 8; round++) {
      const [ready, callback] = await Promise.all([timed(fetch(`${integrations}/readyz`)), timed(notify())]);
      expect(ready).toMatchObject({ status: 503, body: { status: 'unavailable', reason: 'unreachable' } });
      // The driver's words stay on the admin listener.
      expect(ready.body).not.toHaveProperty('detail');
      expect(callback).toMatchObject({ status: 503, body: { error: 'Service unavailable' } });
      expect(Math.max(ready.ms, callback.ms)).toBeLessThan(2000);
    }
    await relay.open();
    const started = Date.now();
    for (;;) {
      const ready = await timed(fetch(`${integrations}/readyz`));
      if (ready.status === 200) break;
      expect(Date.now() - started).toBeLessThan(5000);
    }
    expect(await timed(notify())).toMatchObject({ status: 200, body: { status: 'success' } });
  });

  it('answers an Api-Key read whose credential is not cached 503, and leaves no promise unhandled', async () => {
    const tenant = await service.createTenant();
    await relay.cut();
    try {
      const read = await timed(
        fetch(`${service.urls.integrations}/api/v1/countries/`, {
          headers: { authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}` },
        }),
      );
      expect(read).toMatchObject({ status: 503, body: { success: false, error: { code: 'SERVICE_UNAVAILABLE' } } });
      // The process would have exited on it (vitest reports it as an error of the run as well).
      expect(unhandled).toEqual([]);
    } finally {
      await relay.open();
    }
    await readyAgain(5000);
  });

  it('answers 503 with Retry-After on every host within the deadline while the database does not answer', async () => {
    const tenant = await service.createTenant();
    const invoice = await createInvoice(service, tenant);
    const partnerKey = (
      await service.admin('POST', '/partner-keys', { name: 'hung', scopes: ['countries:read'] })
    ).json().key;
    const { integrations, backend, admin } = service.urls;
    const metricsBefore = await (
      await fetch(`${admin}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } })
    ).text();
    relay.hang();
    let answers: { status: number; ms: number; body: unknown; retryAfter: string | null }[];
    try {
      const request = async (url: string, init: RequestInit = {}) => {
        const started = Date.now();
        const response = await fetch(url, init);
        return {
          status: response.status,
          ms: Date.now() - started,
          body: await response.json(),
          retryAfter: response.headers.get('retry-after'),
        };
      };
      answers = await Promise.all([
        request(`${integrations}/api/v1/countries/`, {
          headers: { authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}` },
        }),
        request(`${integrations}/api/v1/payments/notify/`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': tenant.credentials.partner_api_key },
          body: JSON.stringify(notificationFor(invoice)),
        }),
        request(`${backend}/v1/countries/`, { headers: { authorization: `Api-Key ${partnerKey}` } }),
        request(`${admin}/admin/v1/tenants`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } }),
      ]);
    } finally {
      relay.resume();
    }
    const message = 'Service temporarily unavailable; retry shortly.';
    expect(answers.map(({ status, body, retryAfter }) => [status, retryAfter, body])).toEqual([
      [503, '1', { success: false, message, data: null, error: { code: 'SERVICE_UNAVAILABLE' } }],
      [503, '1', { error: 'Service unavailable' }],
      [503, '1', { detail: message }],
      [503, '1', { error: { code: 'SERVICE_UNAVAILABLE', message } }],
    ]);
    for (const answer of answers) expect(answer.ms).toBeLessThan(DEADLINE_MS + MARGIN_MS);
    await readyAgain(5000);
    const metricsAfter = await (
      await fetch(`${admin}/metrics`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } })
    ).text();
    const exceeded = (text: string) =>
      Number(/^db_request_deadline_exceeded_total (\d+)/m.exec(text)?.[1] ?? Number.NaN);
    expect(exceeded(metricsAfter)).toBeGreaterThanOrEqual(exceeded(metricsBefore) + answers.length);
    expect(unhandled).toEqual([]);
  });

  it('gives up a statement waiting on a lock at the deadline: a 503 in time, and its transaction rolls back', async () => {
    const { tenant } = await service.createTenant();
    const createInvoice = () =>
      timed(
        fetch(`${service.urls.admin}/admin/v1/invoices`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ tenant_id: tenant.id, amount: '10.00', currency: 'SAR' }),
        }),
      );
    const sql = connectTo(database.target.databaseUrl!);
    try {
      // The invoice's foreign key waits for the tenant's row, locked here until the answer came.
      const answer = await sql.begin(async (tx) => {
        await tx`select 1 from tenants where id = ${tenant.id} for update`;
        return createInvoice();
      });
      expect(answer).toMatchObject({ status: 503, body: { error: { code: 'SERVICE_UNAVAILABLE' } } });
      expect(answer.ms).toBeLessThan(DEADLINE_MS + MARGIN_MS);
      // The lock gone, the abandoned transaction ends, without committing.
      await waitFor('the abandoned transaction to end', async () => {
        const [{ open }] = await sql<{ open: number }[]>`
          select count(*)::int as open from pg_stat_activity
           where datname = current_database() and pid <> pg_backend_pid()
             and (state like 'idle in transaction%' or (state = 'active' and query ilike '%invoices%'))`;
        return open === 0;
      });
      const [{ invoices }] = await sql<{ invoices: number }[]>`
        select count(*)::int as invoices from invoices where tenant_id = ${tenant.id}`;
      expect(invoices).toBe(0);
    } finally {
      await sql.end({ timeout: 5 });
    }
    expect(await createInvoice()).toMatchObject({ status: 201 });
  });

  it('has the payment worker log a take the database cannot answer as a warning, not an error', async () => {
    const lines: { level: string; msg: string }[] = [];
    const log = createLogger('warn', { write: (line: string) => lines.push(JSON.parse(line)) });
    const handle = await openDatabase({
      databaseUrl: relay.url,
      dataDir: tmpdir(),
      databaseRequestTimeoutMs: DEADLINE_MS,
    });
    const worker = new PaymentWorker(
      new PaymentRequests(handle),
      { concurrency: 1, perEndpoint: 1, giveUpAfterSeconds: 60, probeSeconds: 20, log },
      async () => [],
    );
    await worker.start();
    await relay.cut();
    try {
      await waitFor('a take that failed', () =>
        lines.some((line) => line.msg.startsWith('payment requests not taken')),
      );
    } finally {
      await relay.open();
      await worker.stop(1000);
      await handle.close();
    }
    const notTaken = lines.filter((line) => line.msg.startsWith('payment requests not taken'));
    expect(notTaken.map((line) => line.level)).toEqual(notTaken.map(() => 'warn'));
    await readyAgain(5000);
  });
});
