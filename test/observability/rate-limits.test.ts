// Rate limits: failed authentications per client address on every host, requests per credential
// on the integrations and backend hosts, the smaller budgets of test invoices and pings, each 429
// in its host's own body with the standard headers; counters in Redis shared by two instances.
import { randomBytes } from 'node:crypto';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { type RunningService, startService } from '../../src/server.js';
import { createInvoice, keyOf, notificationFor } from '../payments/support.js';
import { startTestApps, type TestApps, useApps, useTenant } from '../support/apps.js';
import { TEST_DATABASE_URL } from '../support/database.js';
import { TEST_ADMIN_TOKEN, testEnv } from '../support/env.js';
import { loggerInto } from '../support/logs.js';
import { PartnerEndpoint } from '../support/partner-endpoint.js';
import { parsePrometheus } from '../support/prometheus.js';
import { startTestService, type TestService, useService } from '../support/service.js';

const LIMITS = { AUTH_FAILURE_LIMIT_PER_MINUTE: '30', RATE_LIMIT_PER_MINUTE: '1200' };
const ATTACKER = '203.0.113.7';
const PARTNER = '198.51.100.20';

type Host = 'integrations' | 'backend' | 'admin';

interface Probe {
  name: string;
  host: Host;
  request: (secret: string) => InjectOptions;
  valid: () => string;
  limitedBody: unknown;
}

function send(service: Pick<RunningService, 'apps'>, host: Host, options: InjectOptions, remoteAddress: string) {
  return service.apps[host]!.inject({ ...options, remoteAddress });
}

function expectLimitHeaders(response: LightMyRequestResponse, limit: number) {
  expect(Number(response.headers['ratelimit-limit'])).toBe(limit);
  expect(Number(response.headers['ratelimit-remaining'])).toBeGreaterThanOrEqual(0);
  expect(Number(response.headers['ratelimit-reset'])).toBeGreaterThan(0);
}

async function backendKey(service: TestApps): Promise<string> {
  const response = await service.admin('POST', '/partner-keys', { name: 'limits', scopes: ['countries:read'] });
  expect(response.statusCode).toBe(201);
  return response.json().key;
}

describe('failed authentications per client address', () => {
  const service = useApps(['integrations', 'backend', 'admin'], { env: LIMITS });
  const tenant = useTenant(service);
  let partnerKey: string;
  let invoiceBody: Record<string, unknown>;

  beforeAll(async () => {
    partnerKey = await backendKey(service);
    invoiceBody = notificationFor(await createInvoice(service, tenant));
  });

  const probes: Probe[] = [
    {
      name: 'integrations resources',
      host: 'integrations',
      request: (secret) => ({
        method: 'GET',
        url: '/api/v1/countries/',
        headers: { authorization: `Api-Key ${secret}` },
      }),
      valid: () => tenant.credentials.sso_hmac_secret,
      limitedBody: { success: false, message: 'Too many requests.', data: null, error: { code: 'RATE_LIMITED' } },
    },
    {
      name: 'payment callback',
      host: 'integrations',
      request: (secret) => ({
        method: 'POST',
        url: '/api/v1/payments/notify/',
        headers: { 'x-api-key': secret },
        payload: { ...invoiceBody, transaction_id: `txn_${randomBytes(4).toString('hex')}` },
      }),
      valid: () => keyOf(tenant)['x-api-key'],
      limitedBody: { error: 'Too many requests' },
    },
    {
      name: 'backend',
      host: 'backend',
      request: (secret) => ({ method: 'GET', url: '/v1/countries/', headers: { authorization: `Api-Key ${secret}` } }),
      valid: () => partnerKey,
      limitedBody: { detail: 'Too many requests.' },
    },
    {
      name: 'admin',
      host: 'admin',
      request: (secret) => ({
        method: 'GET',
        url: '/admin/v1/tenants',
        headers: { authorization: `Bearer ${secret}` },
      }),
      valid: () => TEST_ADMIN_TOKEN,
      limitedBody: { error: { code: 'RATE_LIMITED', message: 'Too many requests.' } },
    },
  ];

  it.each(probes.map((probe, index) => [probe.name, probe, index] as const))(
    '%s: the 31st failure from one address is a 429; a valid key from that address and others still works',
    async (_name, probe, index) => {
      // Each probe from its own address: the budget is per address and per host.
      const attacker = `${ATTACKER.slice(0, -1)}${index}`;
      for (let i = 0; i < 30; i++) {
        const response = await send(service, probe.host, probe.request(`pis_wrong_${i}`), attacker);
        expect(response.statusCode).toBe(401);
      }
      const limited = await send(service, probe.host, probe.request('pis_wrong_31'), attacker);
      expect(limited.statusCode).toBe(429);
      expect(limited.json()).toMatchObject(probe.limitedBody as object);
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      expectLimitHeaders(limited, 30);
      expect(limited.headers['ratelimit-remaining']).toBe('0');

      // Other clients' failures never refuse a valid credential, from the same address included.
      expect((await send(service, probe.host, probe.request(probe.valid()), attacker)).statusCode).toBeLessThan(300);
      const partner = await send(service, probe.host, probe.request(probe.valid()), PARTNER);
      expect(partner.statusCode).toBeLessThan(300);
      expect((await send(service, probe.host, probe.request('pis_wrong_32'), attacker)).statusCode).toBe(429);
    },
  );
});

describe('the address a failure counts against', () => {
  let service: TestApps;
  const failFrom = (remoteAddress: string, headers: Record<string, string> = {}) =>
    service.apps.backend!.inject({
      method: 'GET',
      url: '/v1/countries/',
      headers: { authorization: 'Api-Key pis_bk_wrong', ...headers },
      remoteAddress,
    });

  afterAll(() => service?.stop());

  it('is one /64 for IPv6 and one client for every loopback address', async () => {
    service = await startTestApps(['backend'], { env: { AUTH_FAILURE_LIMIT_PER_MINUTE: '3' } });
    const network = ['2001:db8:1:2::1', '2001:db8:1:2:ffff::9', '2001:0db8:0001:0002:aaaa:bbbb:cccc:dddd'];
    for (const address of network) expect((await failFrom(address)).statusCode).toBe(401);
    expect((await failFrom('2001:db8:1:2::7')).statusCode).toBe(429);
    expect((await failFrom('2001:db8:1:3::1')).statusCode).toBe(401);
    for (const address of ['127.0.0.1', '::1', '127.0.0.2']) expect((await failFrom(address)).statusCode).toBe(401);
    expect((await failFrom('::ffff:127.0.0.1')).statusCode).toBe(429);
  });

  it('with TRUST_PROXY=true, is the address the proxy appended, whatever the client wrote before it', async () => {
    await service.stop();
    service = await startTestApps(['backend'], { env: { AUTH_FAILURE_LIMIT_PER_MINUTE: '3', TRUST_PROXY: 'true' } });
    const proxy = '10.0.0.5';
    const rotating = (index: number) => ({ 'x-forwarded-for': `198.51.100.${index}, ${ATTACKER}` });
    for (let index = 0; index < 3; index++) expect((await failFrom(proxy, rotating(index))).statusCode).toBe(401);
    expect((await failFrom(proxy, rotating(3))).statusCode).toBe(429);
    expect((await failFrom(proxy, { 'x-forwarded-for': PARTNER })).statusCode).toBe(401);
  });
});

describe('X-Forwarded-For while TRUST_PROXY is off', () => {
  it('is said once in the log', async () => {
    const lines: string[] = [];
    const service = await startTestApps(['backend'], { logger: loggerInto(lines, 'warn') });
    try {
      for (let request = 0; request < 3; request++) {
        await service.apps.backend!.inject({ url: '/healthz', headers: { 'x-forwarded-for': ATTACKER } });
      }
      const warnings = lines.filter((line) => line.includes('X-Forwarded-For but TRUST_PROXY is off'));
      expect(warnings).toHaveLength(1);
    } finally {
      await service.stop();
    }
  });
});

describe('requests per credential', () => {
  const service = useApps(['integrations', 'backend', 'admin'], {
    env: { RATE_LIMIT_PER_MINUTE: '5', RATE_LIMIT_WINDOW_SECONDS: '2' },
  });
  const tenant = useTenant(service);

  it('carries RateLimit headers on every answer, refuses past the budget, and recovers after the reset', async () => {
    const request: InjectOptions = {
      method: 'GET',
      url: '/api/v1/countries/?limit=1',
      headers: { authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}` },
    };
    for (let remaining = 4; remaining >= 0; remaining--) {
      const response = await send(service, 'integrations', request, PARTNER);
      expect(response.statusCode).toBe(200);
      expectLimitHeaders(response, 5);
      expect(Number(response.headers['ratelimit-remaining'])).toBe(remaining);
    }
    const limited = await send(service, 'integrations', request, PARTNER);
    expect(limited.statusCode).toBe(429);
    expect(limited.json().error.code).toBe('RATE_LIMITED');
    const retryAfter = Number(limited.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(2);

    // Another credential of the same tenant's kind has its own budget: the backend key.
    const key = await backendKey(service);
    const backend = await send(
      service,
      'backend',
      { method: 'GET', url: '/v1/countries/?limit=1', headers: { authorization: `Api-Key ${key}` } },
      PARTNER,
    );
    expect(backend.statusCode).toBe(200);
    expectLimitHeaders(backend, 5);

    let recovered: LightMyRequestResponse | undefined;
    for (let tries = 0; tries < 40 && recovered?.statusCode !== 200; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      recovered = await send(service, 'integrations', request, PARTNER);
    }
    expect(recovered?.statusCode).toBe(200);
  });
});

describe('the budgets of test invoices and pings', () => {
  const service = useApps(['integrations', 'admin'], {
    env: { RATE_LIMIT_PER_MINUTE: '100', RATE_LIMIT_TEST_INVOICES_PER_MINUTE: '3', RATE_LIMIT_PINGS_PER_MINUTE: '2' },
  });
  const tenant = useTenant(service);
  const partner = new PartnerEndpoint();
  let testSso: string;

  beforeAll(async () => {
    await partner.start();
    const secrets = [tenant.credentials.payment_endpoint_secret];
    await service.admin('PATCH', `/tenants/${tenant.tenant.id}`, {
      payment_endpoint_url: partner.route('/live', secrets, [{ status: 200 }]),
      test_payment_endpoint_url: partner.route('/test', secrets, [{ status: 200 }]),
    });
    const issued = await service.admin('POST', `/tenants/${tenant.tenant.id}/credentials`, {
      kind: 'test_sso_hmac_secret',
    });
    testSso = issued.json().secret;
  });
  afterAll(() => partner.stop());

  const as = (secret: string, method: InjectOptions['method'], url: string, payload?: InjectOptions['payload']) =>
    send(service, 'integrations', { method, url, payload, headers: { authorization: `Api-Key ${secret}` } }, PARTNER);
  const refusals = async () =>
    parsePrometheus((await service.apps.admin!.inject({ method: 'GET', url: '/metrics' })).body);
  const refused = (metrics: Awaited<ReturnType<typeof refusals>>, limit: string) =>
    metrics.value('rate_limited_requests_total', { listener: 'integrations', limit });

  it('refuse a credential past its smaller budget, leaving its other requests and other credentials alone', async () => {
    const before = await refusals();
    const invoice = { amount: '10.00', currency: 'SAR' };
    for (let remaining = 2; remaining >= 0; remaining--) {
      const created = await as(testSso, 'POST', '/api/v1/test/invoices/', invoice);
      expect(created.statusCode).toBe(201);
      // The headers describe the budget nearer its end: the route's.
      expectLimitHeaders(created, 3);
      expect(Number(created.headers['ratelimit-remaining'])).toBe(remaining);
    }
    const limited = await as(testSso, 'POST', '/api/v1/test/invoices/', invoice);
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toMatchObject({ success: false, data: null, error: { code: 'RATE_LIMITED' } });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expectLimitHeaders(limited, 3);
    expect((await as(testSso, 'GET', '/api/v1/payment-requests/')).statusCode).toBe(200);
    const invoices = await service.context.database.executeSql(
      `select count(*)::int as n from invoices where tenant_id = $1 and mode = 'test'`,
      [tenant.tenant.id],
    );
    expect(invoices.rows[0].n).toBe(3);

    // Pings: the test secret's two, then a 429; the live secret has a budget of its own.
    for (let ping = 0; ping < 2; ping++) {
      const pinged = await as(testSso, 'POST', '/api/v1/payment-endpoint/ping/');
      expect(pinged.statusCode).toBe(200);
      expectLimitHeaders(pinged, 2);
    }
    expect((await as(testSso, 'POST', '/api/v1/payment-endpoint/ping/')).statusCode).toBe(429);
    expect((await as(tenant.credentials.sso_hmac_secret, 'POST', '/api/v1/payment-endpoint/ping/')).statusCode).toBe(
      200,
    );
    expect(partner.received.get('/test')?.filter((request) => request.body.type === 'ping')).toHaveLength(2);

    const after = await refusals();
    expect(refused(after, 'test_invoices') - refused(before, 'test_invoices')).toBe(1);
    expect(refused(after, 'pings') - refused(before, 'pings')).toBe(1);
  });

  it('are settings of their own, validated at start', () => {
    const config = loadConfig({ RATE_LIMIT_TEST_INVOICES_PER_MINUTE: '0', RATE_LIMIT_PINGS_PER_MINUTE: '7' }, false);
    expect(config.routeBudgets).toEqual({ testInvoicesPerMinute: 0, pingsPerMinute: 7 });
    expect(loadConfig({}, false).routeBudgets).toEqual({ testInvoicesPerMinute: 60, pingsPerMinute: 10 });
    expect(() => loadConfig({ RATE_LIMIT_PINGS_PER_MINUTE: 'ten' }, false)).toThrow(ConfigError);
  });
});

describe('counters in Redis, shared by two instances', () => {
  const shared = {
    ...LIMITS,
    REDIS_URL: 'redis://127.0.0.1:6379',
    REDIS_KEY_PREFIX: `test-${randomBytes(6).toString('hex')}`,
  };
  const first = useService({ env: shared });
  let second: RunningService | undefined;
  afterAll(() => second?.close());

  async function startSecond(databaseTarget: TestService['database']['target'], env: Record<string, string>) {
    second = await startService(loadConfig(testEnv(databaseTarget, { ...shared, ...env })), createLogger('silent'));
    return second;
  }

  it('enforces one failure budget: 15 failures on each instance, then either refuses', async () => {
    // Its own database: the failure budget is per address, not per database.
    const other = await startTestService(shared);
    try {
      const attempt = (service: RunningService) =>
        send(
          service,
          'backend',
          { method: 'GET', url: '/v1/countries/', headers: { authorization: 'Api-Key pis_bk_wrong' } },
          ATTACKER,
        );
      const answers: Record<string, number[]> = { first: [], second: [] };
      for (let i = 0; i < 15; i++) {
        answers.first.push((await attempt(first)).statusCode);
        answers.second.push((await attempt(other)).statusCode);
      }
      expect([...answers.first, ...answers.second].every((status) => status === 401)).toBe(true);
      expect((await attempt(first)).statusCode).toBe(429);
      expect((await attempt(other)).statusCode).toBe(429);
    } finally {
      await other.stop();
    }
  });

  it.skipIf(!TEST_DATABASE_URL)('enforces one budget per credential across instances on one database', async () => {
    const budget = { ...shared, RATE_LIMIT_PER_MINUTE: '10' };
    const one = await startTestService(budget);
    try {
      const two = await startSecond(one.database.target, budget);
      const tenant = await one.createTenant();
      const request: InjectOptions = {
        method: 'GET',
        url: '/api/v1/countries/?limit=1',
        headers: { authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}` },
      };
      const answered = { one: [] as number[], two: [] as number[] };
      for (let i = 0; i < 6; i++) {
        answered.one.push((await send(one, 'integrations', request, PARTNER)).statusCode);
        answered.two.push((await send(two, 'integrations', request, PARTNER)).statusCode);
      }
      // 12 requests against a budget of 10 shared in Redis: the last one on each instance is refused.
      expect(answered).toEqual({ one: [200, 200, 200, 200, 200, 429], two: [200, 200, 200, 200, 200, 429] });
    } finally {
      await second?.close();
      second = undefined;
      await one.stop();
    }
  });
});
