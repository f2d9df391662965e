// A database that is away or out of space is a 503 the client may retry, in each host's own error
// body, with Retry-After; never a 500, never a request left hanging. On PostgreSQL, a real outage:
// the service reaches the database through a TCP relay the test cuts and restores.
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { DrizzleQueryError } from 'drizzle-orm/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppContext } from '../../src/context.js';
import { buildAdminApp } from '../../src/http/admin/app.js';
import { buildBackendApp } from '../../src/http/backend/app.js';
import type { HostApp } from '../../src/http/host.js';
import { buildIntegrationsApp } from '../../src/http/integrations/app.js';
import { createLogger } from '../../src/logger.js';
import { createInvoice, notificationFor } from '../payments/support.js';
import { copyTemplateDatabase, TEST_DATABASE_URL, type TestDatabase } from '../support/database.js';
import { TEST_ADMIN_TOKEN } from '../support/env.js';
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

/** A TCP relay to PostgreSQL that can be cut (connections dropped, new ones refused) and restored. */
class Relay {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(private readonly target: URL) {}

  async open(): Promise<void> {
    this.server = createServer((client) => {
      const upstream = connect(Number(this.target.port || 5432), this.target.hostname);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
    });
    this.server.listen(this.port, '127.0.0.1');
    await once(this.server, 'listening');
    this.port = (this.server.address() as { port: number }).port;
  }

  async cut(): Promise<void> {
    const server = this.server!;
    this.server = null;
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  }
}

async function timed(request: Promise<Response>): Promise<{ status: number; ms: number; body: unknown }> {
  const started = Date.now();
  const response = await request;
  return { status: response.status, ms: Date.now() - started, body: await response.json() };
}

describe.skipIf(!TEST_DATABASE_URL)('PostgreSQL going away and coming back', () => {
  let database: TestDatabase;
  let relay: Relay;
  beforeAll(async () => {
    const { inject } = await import('vitest');
    database = await copyTemplateDatabase(inject('databaseTemplate'));
    relay = new Relay(new URL(database.target.databaseUrl!));
    await relay.open();
  });
  afterAll(async () => {
    await relay?.cut().catch(() => {});
    await database?.drop();
  });
  // The service reaches its database through the relay only.
  const service = useService(() => {
    const url = new URL(database.target.databaseUrl!);
    url.port = String(relay.port);
    return { env: { DATABASE_URL: url.toString() } };
  });

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
});
