// The whole log of a scenario at trace level, a malformed request and a database failure
// (Drizzle's error, parameters in its message) included, holds no issued secret and no card number.
import { connect } from 'node:net';
import { DrizzleQueryError } from 'drizzle-orm/errors';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { buildIntegrationsApp } from '../../src/http/integrations/app.js';
import { type RunningService, startService } from '../../src/server.js';
import { createInvoice, notificationFor } from '../payments/support.js';
import { useApps, useTenant } from '../support/apps.js';
import { copyTemplateDatabase } from '../support/database.js';
import { TEST_ADMIN_TOKEN, testEnv } from '../support/env.js';
import { loggerInto } from '../support/logs.js';

const CARD_NUMBER = '4111111111111111';

/** Sends raw bytes on a socket and resolves with whatever comes back before the server closes it. */
function rawRequest(url: string, bytes: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname, () => socket.write(bytes));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk));
    socket.on('close', () => resolve(answer));
    socket.setTimeout(3000, () => socket.destroy());
  });
}

describe('the log of a scenario at trace level', () => {
  const lines: string[] = [];
  const service = useApps(['integrations', 'backend', 'admin'], {
    logger: loggerInto(lines, 'trace'),
    listen: true,
  });
  const tenant = useTenant(service);
  let partnerKey: string;

  beforeAll(async () => {
    partnerKey = (await service.admin('POST', '/partner-keys', { name: 'logs', scopes: ['cities:read'] })).json().key;
  });

  it('holds no secret and no card number, whatever the requests', async () => {
    const { sso_hmac_secret, partner_api_key } = tenant.credentials;
    const integrations = service.urls.integrations!;
    // A malformed request (a bare LF inside a header) with both key headers in it: a client error
    // whose raw bytes Fastify attaches to the error it logs.
    await rawRequest(
      integrations,
      `GET /api/v1/cities/ HTTP/1.1\r\nHost: x\r\nX-API-KEY: ${partner_api_key}\r\nAuthorization: Api-Key ${sso_hmac_secret}\r\nX-Bad: a\nb\r\n\r\n`,
    );
    // Keys sent where they do not belong: in query strings.
    await fetch(`${integrations}/api/v1/cities/?api_key=${sso_hmac_secret}&limit=1`);
    await fetch(`${service.urls.backend}/v1/cities/?token=${partnerKey}`, { headers: { authorization: 'Api-Key x' } });
    // A notification with a card number in an extra field, while the database fails.
    const invoice = await createInvoice(service, tenant);
    // Drizzle's own error (its message spells the parameters out after the statement) around the
    // driver's (postgres.js keeps the statement and parameters as fields).
    const queryError = () =>
      new DrizzleQueryError(
        'insert into payment_events (...) values ($1, $2, $3)',
        [JSON.stringify({ card: CARD_NUMBER }), partner_api_key],
        Object.assign(new Error('could not write to file: permission denied'), {
          params: [CARD_NUMBER],
          query: 'select * from receive_payment_notification($1, $2)',
          parameters: [JSON.stringify({ card_number: CARD_NUMBER }), partner_api_key],
        }),
      );
    const failing = new Proxy(service.context.db, {
      get: (target, property, receiver) =>
        property === 'transaction' || property === 'execute'
          ? () => {
              throw queryError();
            }
          : Reflect.get(target, property, receiver),
    });
    const database = {
      ...service.context.database,
      dedicatedConnections: (count: number) => ({
        size: count,
        deadlineMs: service.context.config.databaseRequestTimeoutMs,
        run: () => Promise.reject(queryError()),
      }),
    };
    const app = await buildIntegrationsApp({ ...service.context, db: failing, database }, loggerInto(lines, 'trace'));
    try {
      const response = await app.inject({
        method: 'POST',
        url: '/api/v1/payments/notify/',
        headers: { 'x-api-key': partner_api_key },
        payload: { ...notificationFor(invoice), gateway_data: { card_number: CARD_NUMBER } },
      });
      expect(response.statusCode).toBe(500);
    } finally {
      await app.close();
    }

    const text = lines.join('\n');
    expect(text).toContain('could not write to file');
    expect(text).toContain('Failed query: insert into payment_events');
    expect(text).toMatch(/client ?error|clientError|request errored|Parse Error/i);
    for (const secret of [...Object.values(tenant.credentials), partnerKey, TEST_ADMIN_TOKEN, CARD_NUMBER]) {
      expect(text).not.toContain(secret);
    }
  });
});

describe('messages about configuration and start-up', () => {
  it('masks the password of a URL it cannot parse', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://app:hunter2@db:port/app' }, false)).toThrow(
      'DATABASE_URL must be a URL, got "postgres://app:***@db:port/app"',
    );
  });

  it('never logs a generated admin token: it goes to a file only its owner can read', async () => {
    const lines: string[] = [];
    const database = await copyTemplateDatabase(inject('databaseTemplate'));
    const env = testEnv(database.target, { ADMIN_HOST: '0.0.0.0' });
    delete env.ADMIN_TOKEN;
    const config = loadConfig(env, false);
    let running: RunningService | undefined;
    try {
      running = await startService(config, loggerInto(lines, 'info'));
      const records = lines.map((line) => JSON.parse(line));
      const announced = records.find((record) => /ADMIN_TOKEN not set/.test(record.msg));
      expect(lines.join('\n')).not.toContain(config.adminToken);
      if (process.stderr.isTTY) return;
      const { readFileSync, statSync } = await import('node:fs');
      expect(readFileSync(announced.file, 'utf8').trim()).toBe(config.adminToken);
      expect(statSync(announced.file).mode & 0o777).toBe(0o600);
      // And the admin listener on every address is said loudly.
      expect(records.some((record) => record.level === 'warn' && /NOT ON LOOPBACK/.test(record.msg))).toBe(true);
    } finally {
      await running?.close();
      await database.drop();
    }
  });
});
