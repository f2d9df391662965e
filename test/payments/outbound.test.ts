// The outbound payment request (DECISIONS §7) end to end: a partner's endpoint on loopback that
// verifies the Standard Webhooks signature as a partner would, failing first and then answering.
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { statement } from '../../src/db/statements.js';
import { createLogger } from '../../src/logger.js';
import { deliver } from '../../src/payments/delivery/deliver.js';
import { PaymentRequests, type TakenRequest } from '../../src/payments/delivery/requests.js';
import { DEFAULT_RETRY_POLICY } from '../../src/payments/delivery/retry.js';
import { type RunningService, startService } from '../../src/server.js';
import { sealedPaymentEndpointSecrets } from '../../src/tenants/index.js';
import { TEST_DATABASE_URL } from '../support/database.js';
import { TEST_ADMIN_TOKEN, testEnv } from '../support/env.js';
import { loggerInto } from '../support/logs.js';
import { PartnerEndpoint, type Reply, waitFor } from '../support/partner-endpoint.js';
import { partnerctl } from '../support/process.js';
import { startTestService, type TestService, useService } from '../support/service.js';
import { createInvoice, createTrip, keyOf, notificationFor, notify, showInvoice } from './support.js';

const FAST_RETRIES = { PAYMENT_RETRY_BASE_SECONDS: '0.5' };
/** The lease holder of the requests a test hands to `deliver` itself. */
const WORKER = 'worker-of-the-test';

/**
 * Whether an attempt for the invoice is still due or running: a retry is enqueued in the very
 * transaction that records the attempt before it, so once none is, no more attempts will come.
 */
async function attemptPending(service: TestService, invoiceId: string): Promise<boolean> {
  const { rows } = await service.context.database.executeSql<{ open: number }>(
    `select count(*)::int as open from payment_requests where invoice_id = $1 and state <> 'done'`,
    [invoiceId],
  );
  return rows[0].open > 0;
}

/** Failed live attempts counted in payment_request_attempts_total so far. */
const failedAttempts = async (service: TestService) =>
  (await service.context.metrics.paymentRequestAttempts.get()).values.find(
    ({ labels }) => labels.outcome === 'failed' && labels.mode === 'live',
  )?.value ?? 0;

const attemptsOver = (service: TestService, invoiceId: string) =>
  waitFor('no attempt due', async () => !(await attemptPending(service, invoiceId)));

describe('outbound payment request', () => {
  let service: TestService;
  /** After the restart test, the instance that replaced `service` on the same database. */
  let replacement: RunningService | undefined;
  const partner = new PartnerEndpoint();

  beforeAll(async () => {
    await partner.start();
    // Retries after about 0.5 s, 1 s, 2 s... instead of 30 s, 1 min, 2 min.
    service = await startTestService(FAST_RETRIES);
  });
  afterAll(async () => {
    await replacement?.close();
    if (replacement) await service.database.drop();
    else await service.stop();
    await partner.stop();
  });

  async function tenantWithEndpoint(path: string, replies: Reply[]) {
    const tenant = await service.createTenant({ gateway: 'tap' });
    const url = partner.route(path, [tenant.credentials.payment_endpoint_secret], replies);
    await service.admin('PATCH', `/tenants/${tenant.tenant.id}`, { payment_endpoint_url: url });
    return tenant;
  }

  it('retries 503s with backoff, then keeps the payment_url; every attempt signed and recorded', async () => {
    const tenant = await tenantWithEndpoint('/retry', [
      { status: 503 },
      { status: 503, headers: { 'retry-after': '1' } },
      { status: 200, body: { payment_url: 'https://pay.example.com/session/abc' } },
    ]);
    const trip = await createTrip(service, tenant);
    const invoice = await createInvoice(service, tenant, { amount: '250.5', trip_id: trip.id });
    expect(invoice.amount).toBe('250.50');

    const shown = await waitFor('the third attempt', async () => {
      const current = await showInvoice(service, invoice.id);
      return current.invoice.payment_url ? current : undefined;
    });
    expect(shown.invoice.payment_url).toBe('https://pay.example.com/session/abc');
    expect(shown.deliveries.map(({ attempt, http_status, error }) => ({ attempt, http_status, error }))).toEqual([
      { attempt: 1, http_status: 503, error: 'endpoint answered HTTP 503' },
      { attempt: 2, http_status: 503, error: 'endpoint answered HTTP 503' },
      { attempt: 3, http_status: 200, error: null },
    ]);
    for (const delivery of shown.deliveries) expect(delivery.latency_ms).toBeGreaterThanOrEqual(0);
    // Each failed attempt says when the next is due; the delivered one plans none.
    for (const delivery of shown.deliveries.slice(0, 2)) {
      expect(Date.parse(delivery.next_retry_at!)).toBeGreaterThan(Date.parse(delivery.attempted_at));
    }
    expect(
      Date.parse(shown.deliveries[1].next_retry_at!) - Date.parse(shown.deliveries[1].attempted_at),
    ).toBeGreaterThanOrEqual(1000);
    expect(shown.deliveries[2].next_retry_at).toBeNull();
    expect(shown.deliveries[2].response_body).toBe('{"payment_url":"https://pay.example.com/session/abc"}');

    const received = partner.received.get('/retry')!;
    expect(received).toHaveLength(3);
    for (const request of received) {
      expect(request.verifiedWith).toEqual([true]);
      expect(request.headers['webhook-id']).toBe(received[0].headers['webhook-id']);
      expect(request.body).toEqual({
        type: 'payment.requested',
        invoice_id: invoice.id,
        amount: '250.50',
        currency: 'SAR',
        gateway: 'tap',
        trip_id: trip.id,
        notify_url: `${service.urls.integrations}/api/v1/payments/notify/`,
        created_at: shown.invoice.created_at,
        livemode: true,
      });
    }
    await attemptsOver(service, invoice.id);
    expect(partner.received.get('/retry')).toHaveLength(3);
  });

  it('signs with every active endpoint secret, so a partner rotating secrets verifies with either', async () => {
    const tenant = await service.createTenant({ gateway: 'tap' });
    const issued = await service.admin('POST', `/tenants/${tenant.tenant.id}/credentials`, {
      kind: 'payment_endpoint_secret',
    });
    const secrets = [tenant.credentials.payment_endpoint_secret, issued.json().secret];
    const url = partner.route('/rotation', secrets, [{ status: 204 }]);
    await service.admin('PATCH', `/tenants/${tenant.tenant.id}`, { payment_endpoint_url: url });
    const invoice = await createInvoice(service, tenant);
    await waitFor('the delivery', async () => (await showInvoice(service, invoice.id)).deliveries.length === 1);
    const [request] = partner.received.get('/rotation')!;
    expect(request.verifiedWith).toEqual([true, true]);
    expect(String(request.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect((await showInvoice(service, invoice.id)).invoice.payment_url).toBeNull();
  });

  it('gives up at once on a 4xx other than 408 and 429', async () => {
    const tenant = await tenantWithEndpoint('/refused', [{ status: 422, body: { error: 'unknown merchant' } }]);
    const invoice = await createInvoice(service, tenant);
    await waitFor('the attempt', async () => (await showInvoice(service, invoice.id)).deliveries.length === 1);
    await attemptsOver(service, invoice.id);
    const shown = await showInvoice(service, invoice.id);
    expect(shown.deliveries).toHaveLength(1);
    expect(shown.deliveries[0]).toMatchObject({
      http_status: 422,
      error: 'endpoint answered HTTP 422 (final: not retried)',
    });
  });

  it('stops retrying once the partner has reported an outcome for the invoice', async () => {
    const tenant = await tenantWithEndpoint('/settled', [{ status: 503, headers: { 'retry-after': '2' } }]);
    const invoice = await createInvoice(service, tenant);
    await waitFor('the first attempt', async () => (await showInvoice(service, invoice.id)).deliveries.length === 1);
    const paid = await notify(service, notificationFor(invoice), keyOf(tenant));
    expect(paid.json()).toEqual({ status: 'success' });
    // The retry due 2 s later finds the invoice settled and ends without calling.
    await attemptsOver(service, invoice.id);
    expect((await showInvoice(service, invoice.id)).deliveries).toHaveLength(1);
    expect(partner.received.get('/settled')).toHaveLength(1);
  });

  it('retries 408 and 429, honouring Retry-After as an HTTP date', async () => {
    const tenant = await tenantWithEndpoint('/throttled', [
      { status: 408 },
      { status: 429, headers: { 'retry-after': new Date(Date.now() + 1000).toUTCString() } },
      { status: 200, body: { payment_url: 'not a url' } },
    ]);
    const invoice = await createInvoice(service, tenant);
    const shown = await waitFor('the third attempt', async () => {
      const current = await showInvoice(service, invoice.id);
      return current.deliveries.length === 3 && current;
    });
    expect(shown.deliveries.map((delivery) => delivery.http_status)).toEqual([408, 429, 200]);
    // A reply without a usable payment_url still counts as delivered.
    expect(shown.invoice.payment_url).toBeNull();
  });

  it('records a delivery whose payment_url holds what no URL holds (NUL, a lone surrogate, a newline) without it', async () => {
    for (const [path, url] of [
      ['/nul-url', 'https://pay.example/\\u0000x'],
      ['/surrogate-url', 'https://pay.example/\\ud800x'],
      ['/newline-url', 'https://pay.example/a\\nb'],
    ]) {
      // The escapes as a partner's JSON encoder writes them.
      const tenant = await tenantWithEndpoint(path, [{ status: 200, body: `{"payment_url":"${url}"}` }]);
      const invoice = await createInvoice(service, tenant);
      const shown = await waitFor('the attempt on record', async () => {
        const current = await showInvoice(service, invoice.id);
        return current.deliveries.length === 1 && current;
      });
      expect(shown.deliveries[0]).toMatchObject({ http_status: 200, error: null });
      expect(shown.invoice.payment_url).toBeNull();
      expect(partner.received.get(path)).toHaveLength(1);
    }
  });

  it('retries network errors', async () => {
    const closed = http.createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const tenant = await service.createTenant({
      gateway: 'tap',
      payment_endpoint_url: `http://127.0.0.1:${port}/gone`,
    });
    const invoice = await createInvoice(service, tenant);
    const shown = await waitFor('two attempts', async () => {
      const current = await showInvoice(service, invoice.id);
      return current.deliveries.length >= 2 && current;
    });
    for (const delivery of shown.deliveries.slice(0, 2)) {
      expect(delivery.http_status).toBeNull();
      expect(delivery.error).toMatch(/^ECONNREFUSED/);
      expect(delivery.error).not.toMatch(/final/);
    }
  });

  it('reads no more than 64 KiB of a reply: an endpoint that never ends its 200 is delivered, not timed out', async () => {
    const endless = http.createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.write(`{"payment_url":"https://pay.example.com/s","padding":"${'x'.repeat(70 * 1024)}`);
      });
    });
    endless.listen(0, '127.0.0.1');
    await once(endless, 'listening');
    try {
      const tenant = await service.createTenant({
        gateway: 'tap',
        payment_endpoint_url: `http://127.0.0.1:${(endless.address() as AddressInfo).port}/endless`,
      });
      const invoice = await createInvoice(service, tenant);
      const delivery = await waitFor('the attempt recorded', async () =>
        (await showInvoice(service, invoice.id)).deliveries.find(
          (each) => each.http_status !== null || each.error !== null,
        ),
      );
      expect(delivery).toMatchObject({ http_status: 200, error: null });
      expect(delivery.response_body).toHaveLength(1024);
    } finally {
      endless.closeAllConnections();
      await new Promise((resolve) => endless.close(resolve));
    }
  });

  it('records an attempt at the time it left, not the time its slow answer came', async () => {
    let receivedAt = 0;
    const slow = http.createServer((request, response) => {
      receivedAt = Date.now();
      request.resume();
      setTimeout(() => response.end('{}'), 1500);
    });
    slow.listen(0, '127.0.0.1');
    await once(slow, 'listening');
    try {
      const tenant = await service.createTenant({
        gateway: 'tap',
        payment_endpoint_url: `http://127.0.0.1:${(slow.address() as AddressInfo).port}/slow`,
      });
      const invoice = await createInvoice(service, tenant);
      const delivery = await waitFor(
        'the attempt recorded',
        async () => (await showInvoice(service, invoice.id)).deliveries[0],
      );
      expect(delivery).toMatchObject({ http_status: 200, error: null });
      expect(Date.parse(delivery.attempted_at)).toBeLessThanOrEqual(receivedAt);
      expect(delivery.latency_ms).toBeGreaterThanOrEqual(1500);
    } finally {
      await new Promise((resolve) => slow.close(resolve));
    }
  });

  it('records a tenant without a payment endpoint as one failed attempt, never retried, and counts it', async () => {
    const before = await failedAttempts(service);
    const tenant = await service.createTenant({ gateway: 'tap' });
    const invoice = await createInvoice(service, tenant);
    expect(await failedAttempts(service)).toBe(before + 1);
    await attemptsOver(service, invoice.id);
    const shown = await showInvoice(service, invoice.id);
    expect(shown.invoice.status).toBe('pending');
    expect(shown.deliveries).toEqual([
      expect.objectContaining({
        attempt: 1,
        http_status: null,
        latency_ms: null,
        error: 'tenant has no payment endpoint configured (final: not retried)',
        request: null,
      }),
    ]);
  });

  it('records a request it cannot sign (a sealed secret no key opens) as a failed attempt, and counts it', async () => {
    const tenant = await tenantWithEndpoint('/unsigned', [{ status: 200 }]);
    await service.context.database.executeSql(
      `update credentials set sealed_secret = 'v1.not-a-sealed-secret'
        where tenant_id = $1 and kind = 'payment_endpoint_secret'`,
      [tenant.tenant.id],
    );
    const before = await failedAttempts(service);
    const invoice = await createInvoice(service, tenant);
    const shown = await waitFor('the failed attempt', async () => {
      const current = await showInvoice(service, invoice.id);
      return current.deliveries.length === 1 && current;
    });
    expect(shown.deliveries[0]).toMatchObject({ attempt: 1, http_status: null });
    expect(shown.deliveries[0].error).toMatch(/^payment endpoint secret unreadable: .* \(final: not retried\)$/);
    expect(await failedAttempts(service)).toBe(before + 1);
    expect(partner.received.get('/unsigned')).toEqual([]);
    // Revoked: a service refuses to start while an active secret opens with none of its keys.
    await service.context.database.executeSql(
      `update credentials set revoked_at = now() where tenant_id = $1 and kind = 'payment_endpoint_secret'`,
      [tenant.tenant.id],
    );
  });

  /**
   * The attempt number 2 of a new invoice of a new tenant whose endpoint answers `replies`, as the
   * take hands it to a worker: its request taken by WORKER, with what the take reads beside it.
   */
  async function activeSecondAttempt(path: string, replies: Reply[]) {
    const tenant = await service.createTenant({ gateway: 'tap' });
    const invoice = await createInvoice(service, tenant);
    // Without an endpoint, the first attempt is recorded as failed, and no job is left.
    await attemptsOver(service, invoice.id);
    const url = partner.route(path, [tenant.credentials.payment_endpoint_secret], replies);
    await service.admin('PATCH', `/tenants/${tenant.tenant.id}`, { payment_endpoint_url: url });
    // Taken under a lease that outlasts the test: the service's worker leaves it.
    await service.context.database.executeSql(
      `insert into payment_requests (invoice_id, tenant_id, mode, attempt, state, lease_holder, lease_until)
       values ($1, $2, 'live', 2, 'taken', $3, now() + interval '1 hour')`,
      [invoice.id, tenant.tenant.id, WORKER],
    );
    const request: TakenRequest = {
      invoice: {
        id: invoice.id,
        tenantId: tenant.tenant.id,
        mode: 'live',
        status: 'pending',
        amount: invoice.amount,
        currency: invoice.currency,
        tripId: null,
        createdAt: new Date(invoice.created_at),
      },
      attempt: 2,
      enqueuedAt: new Date(),
      tenant: { id: tenant.tenant.id, gateway: 'tap', paymentEndpointUrl: url, testPaymentEndpointUrl: null },
      sealedSecrets: await sealedPaymentEndpointSecrets(service.context.db, tenant.tenant.id),
      breaker: null,
      traceparent: null,
      holder: WORKER,
    };
    return { invoice, request };
  }

  /**
   * What a worker is given, on a database handle whose first `run` or `transact` fails as an
   * unreachable database does: before the statement reaches it, or (`after`) once it has committed.
   */
  function dependenciesWithOneLostAnswer(lines: string[], failing: 'before' | 'after') {
    const lost = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    let failures = 1;
    const database = new Proxy(service.context.database, {
      get: (target, property, receiver) => {
        const real = Reflect.get(target, property, receiver);
        if ((property !== 'run' && property !== 'transact') || failures-- <= 0) return real;
        if (failing === 'before') return () => Promise.reject(lost());
        return async (...args: unknown[]) => {
          await real.apply(target, args);
          throw lost();
        };
      },
    });
    return {
      db: service.context.db,
      database,
      requests: new PaymentRequests(database),
      openSecret: (sealed: string) => service.context.secretBox.open(sealed),
      notifyUrl: 'http://127.0.0.1/api/v1/payments/notify/',
      allowPrivateEndpoints: true,
      retryPolicy: DEFAULT_RETRY_POLICY,
      breakerPolicy: { failures: 5, coolDownSeconds: 1, maxCoolDownSeconds: 1 },
      log: loggerInto(lines, 'info'),
    };
  }

  it('records an attempt once the database is back, after logging that it could not yet', async () => {
    const { invoice, request } = await activeSecondAttempt('/unrecorded', [{ status: 200 }]);
    const lines: string[] = [];
    await deliver(dependenciesWithOneLostAnswer(lines, 'before'), request, () => null);
    expect(partner.received.get('/unrecorded')).toHaveLength(1);
    expect(lines.map((line) => JSON.parse(line))).toEqual([
      expect.objectContaining({
        msg: 'payment request delivered',
        invoice_id: invoice.id,
        attempt: 2,
        http_status: 200,
      }),
      expect.objectContaining({
        msg: 'payment request attempt not recorded yet: database unreachable, trying again',
        invoice_id: invoice.id,
        attempt: 2,
      }),
    ]);
    const shown = await showInvoice(service, invoice.id);
    expect(shown.deliveries.map(({ attempt, http_status }) => ({ attempt, http_status }))).toEqual([
      { attempt: 1, http_status: null },
      { attempt: 2, http_status: 200 },
    ]);
  });

  it.each([
    ['a delivery', 200, 'done', 2],
    ['a failure to retry', 503, 'waiting', 3],
  ])(
    'records %s once when its commit was made but the answer lost, and plans no retry twice',
    async (_, status, state, attempt) => {
      const { invoice, request } = await activeSecondAttempt(`/answer-lost-${status}`, [{ status }]);
      const lines: string[] = [];
      await deliver(dependenciesWithOneLostAnswer(lines, 'after'), request, () => null);
      expect(lines.map((line) => JSON.parse(line).msg)).toContain(
        'payment request attempt not recorded yet: database unreachable, trying again',
      );
      const shown = await showInvoice(service, invoice.id);
      expect(shown.deliveries.map(({ attempt, http_status }) => ({ attempt, http_status }))).toEqual([
        { attempt: 1, http_status: null },
        { attempt: 2, http_status: status },
      ]);
      const { rows } = await service.context.database.executeSql(
        'select state, attempt, lease_holder from payment_requests where invoice_id = $1',
        [invoice.id],
      );
      expect(rows[0]).toEqual({ state, attempt, lease_holder: null });
    },
  );

  it('sends the payment request again on demand after a final 4xx, same webhook-id; refused once settled', async () => {
    const refusal = JSON.stringify({ error: 'unknown merchant', detail: 'é'.repeat(2000) });
    const tenant = await tenantWithEndpoint('/resend', [
      { status: 400, body: refusal },
      { status: 200, body: { payment_url: 'https://pay.example.com/resent' } },
    ]);
    const invoice = await createInvoice(service, tenant);
    const first = await waitFor('the final attempt', async () => {
      const current = await showInvoice(service, invoice.id);
      return current.deliveries.length === 1 && current.deliveries[0];
    });
    expect(first).toMatchObject({ http_status: 400, next_retry_at: null });
    // The start of the reply, at most 1 KiB, never a split character.
    expect(Buffer.byteLength(first.response_body!)).toBeLessThanOrEqual(1024);
    expect(Buffer.byteLength(first.response_body!)).toBeGreaterThan(1020);
    expect(refusal.startsWith(first.response_body!)).toBe(true);

    // `partnerctl invoices resend` is POST /admin/v1/invoices/{id}/payment-requests, answered 202.
    const env = { ADMIN_URL: service.urls.admin!, ADMIN_TOKEN: TEST_ADMIN_TOKEN };
    const resent = await partnerctl(['invoices', 'resend', invoice.id, '--json'], env);
    expect(resent.code, resent.stderr).toBe(0);
    expect(JSON.parse(resent.stdout)).toEqual({ invoice_id: invoice.id, attempt: 2 });
    const shown = await waitFor('the resent attempt', async () => {
      const current = await showInvoice(service, invoice.id);
      return current.invoice.payment_url ? current : undefined;
    });
    expect(shown.deliveries.map(({ attempt, http_status }) => ({ attempt, http_status }))).toEqual([
      { attempt: 1, http_status: 400 },
      { attempt: 2, http_status: 200 },
    ]);
    const received = partner.received.get('/resend')!;
    expect(received).toHaveLength(2);
    expect(received[1].verifiedWith).toEqual([true]);
    expect(received[1].headers['webhook-id']).toBe(received[0].headers['webhook-id']);
    const shownByCli = await partnerctl(['invoices', 'show', invoice.id], env);
    expect(shownByCli.code, shownByCli.stderr).toBe(0);
    expect(shownByCli.stdout).toContain(
      `last request sent (attempt 2):\nPOST ${partner.url}/resend\nwebhook-id: msg_${invoice.id}\n` +
        `webhook-timestamp: ${received[1].headers['webhook-timestamp']}\n${received[1].raw}`,
    );

    await notify(service, notificationFor(invoice), keyOf(tenant));
    const refused = await service.admin('POST', `/invoices/${invoice.id}/payment-requests`);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error).toEqual({
      code: 'CONFLICT',
      message: 'The invoice is paid: the partner has reported an outcome, so its payment request is not sent again.',
    });
    const refusedByCli = await partnerctl(['invoices', 'resend', invoice.id], env);
    expect(refusedByCli.code).toBe(1);
    expect(refusedByCli.stderr).toContain('409 CONFLICT The invoice is paid');
    const unknown = await service.admin('POST', '/invoices/00000000-0000-4000-8000-000000000000/payment-requests');
    expect(unknown.statusCode).toBe(404);
  });

  // Last: it replaces the service.
  it('loses no delivery when the service restarts between attempts', async () => {
    const tenant = await tenantWithEndpoint('/restart', [
      // The retry is due after the old instance is gone.
      { status: 500, headers: { 'retry-after': '3' } },
      { status: 200, body: { payment_url: 'https://pay.example.com/after-restart' } },
    ]);
    const invoice = await createInvoice(service, tenant);
    await waitFor('the first attempt', async () => (await showInvoice(service, invoice.id)).deliveries.length === 1);
    await service.close();
    replacement = await startService(
      loadConfig(testEnv(service.database.target, FAST_RETRIES)),
      createLogger('silent'),
    );
    const restartedAt = Date.now();
    const admin = (path: string) =>
      replacement!.apps.admin!.inject({
        method: 'GET',
        url: `/admin/v1${path}`,
        headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
      });
    const shown = await waitFor('the retry on the new instance', async () => {
      const current = (await admin(`/invoices/${invoice.id}`)).json();
      return current.invoice.payment_url ? current : undefined;
    });
    expect(shown.invoice.payment_url).toBe('https://pay.example.com/after-restart');
    expect(shown.deliveries.map((delivery: { http_status: number }) => delivery.http_status)).toEqual([500, 200]);
    expect(Date.parse(shown.deliveries[1].attempted_at)).toBeGreaterThanOrEqual(restartedAt);
    expect(partner.received.get('/restart')).toHaveLength(2);
  });
});

describe('SSRF guard', () => {
  const partner = new PartnerEndpoint();
  beforeAll(() => partner.start());
  afterAll(() => partner.stop());
  const service = useService({ env: { ALLOW_PRIVATE_PAYMENT_ENDPOINTS: 'false' } });

  it('refuses an endpoint on a loopback address, records why, and never calls it', async () => {
    const tenant = await service.createTenant({ gateway: 'tap' });
    const url = partner.route('/private', [tenant.credentials.payment_endpoint_secret], [{ status: 200 }]);
    for (const endpoint of [url, url.replace('127.0.0.1', 'localhost')]) {
      await service.admin('PATCH', `/tenants/${tenant.tenant.id}`, { payment_endpoint_url: endpoint });
      const invoice = await createInvoice(service, tenant);
      const shown = await waitFor('the refused attempt', async () => {
        const current = await showInvoice(service, invoice.id);
        return current.deliveries.length === 1 && current;
      });
      expect(shown.deliveries[0].http_status).toBeNull();
      expect(shown.deliveries[0].error).toMatch(
        /resolves to non-public address (127\.0\.0\.1|::1) \(final: not retried\)$/,
      );
    }
    expect(partner.received.get('/private')).toEqual([]);
  });
});

describe('a resend while an attempt is being recorded', () => {
  // No worker: the test records the attempt itself, holding its transaction open.
  const service = useService({ env: { PAYMENT_WORKER: 'false' } });

  it('waits for the recording to commit, and neither deadlocks', async () => {
    const tenant = await service.createTenant({ gateway: 'tap', payment_endpoint_url: 'http://127.0.0.1:9/pay' });
    const invoice = await createInvoice(service, tenant);
    const lockWaits = statement<[], { waiting: number }>(
      `select count(*)::int as waiting from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock'`,
    );
    let resend: Promise<{ statusCode: number; body: string }> | undefined;
    // What recording an attempt does, in its order: the request's row, then an attempt row whose
    // foreign key locks the invoice. The resend asked for meanwhile must not hold the invoice.
    await service.context.database.transact(async (run) => {
      const locked = await run(
        statement<[string], { invoice_id: string }>(
          'update payment_requests set enqueued_at = now() where invoice_id = $1 returning invoice_id',
        ),
        [invoice.id],
      );
      expect(locked).toHaveLength(1);
      // `then` sends it: an injected request waits for it.
      resend = service.admin('POST', `/invoices/${invoice.id}/payment-requests`).then((response) => response);
      await waitFor(
        'the resend to wait for the recording',
        async () => (await service.context.database.run(lockWaits, []))[0].waiting > 0,
      );
      await run(
        statement<[string], never>(
          `insert into payment_deliveries (invoice_id, attempt, http_status, latency_ms) values ($1, 1, 503, 5)`,
        ),
        [invoice.id],
      );
    });
    const resent = await resend!;
    expect(resent.statusCode, resent.body).toBe(202);
    expect(JSON.parse(resent.body)).toEqual({ invoice_id: invoice.id, attempt: 2 });
  });
});

describe.skipIf(!TEST_DATABASE_URL)('PAYMENT_WORKER=false (PostgreSQL: two instances on one database)', () => {
  let worker: RunningService | undefined;
  const partner = new PartnerEndpoint();
  beforeAll(() => partner.start());
  afterAll(() => partner.stop());
  const service = useService({ env: { PAYMENT_WORKER: 'false' } });
  afterAll(() => worker?.close());

  it('enqueues without delivering; a worker-only instance delivers', async () => {
    const tenant = await service.createTenant({ gateway: 'tap' });
    const url = partner.route('/separate', [tenant.credentials.payment_endpoint_secret], [{ status: 200 }]);
    await service.admin('PATCH', `/tenants/${tenant.tenant.id}`, { payment_endpoint_url: url });
    const invoice = await createInvoice(service, tenant);
    // Enqueued and waiting; the worker-only instance below takes it (a fixed wait here proved nothing more).
    expect(await attemptPending(service, invoice.id)).toBe(true);
    expect((await showInvoice(service, invoice.id)).deliveries).toEqual([]);
    expect(partner.received.get('/separate')).toEqual([]);

    worker = await startService(
      loadConfig(testEnv(service.database.target, { ...FAST_RETRIES, LISTENERS: '', INTEGRATIONS_PORT: '28280' })),
      createLogger('silent'),
    );
    expect(worker.urls).toEqual({});
    await waitFor('the delivery', async () => (await showInvoice(service, invoice.id)).deliveries.length === 1);
    expect(partner.received.get('/separate')).toHaveLength(1);
    // Without INTEGRATIONS_PUBLIC_URL or a listener of its own, the worker names INTEGRATIONS_PORT.
    expect(partner.received.get('/separate')![0].body.notify_url).toBe(
      'http://127.0.0.1:28280/api/v1/payments/notify/',
    );
  });
});
