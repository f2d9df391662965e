// The payment request worker under partners that misbehave: a hung endpoint keeps to its own
// slots, a failing one trips its breaker and is probed back, a killed worker's requests go out
// after a restart, and two instances together keep to the per-endpoint limit.
import type http from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { PaymentRequests } from '../../src/payments/delivery/requests.js';
import { type RunningService, startService } from '../../src/server.js';
import { copyTemplateDatabase } from '../support/database.js';
import { TEST_ADMIN_TOKEN, testEnv } from '../support/env.js';
import { LoopbackServer, waitFor } from '../support/partner-endpoint.js';
import { startServiceProcess } from '../support/process.js';
import { startTestService, type TestService } from '../support/service.js';
import { createInvoice, PGBOSS_JOB_TABLE, showInvoice } from './support.js';

type Behaviour = 'hang' | { status: number; delayMs?: number };

/**
 * Partners' endpoints on one loopback server: per path a behaviour (changeable), what arrived
 * (webhook-id and when), and the most requests it had open at once.
 */
class Endpoints extends LoopbackServer {
  readonly behaviour = new Map<string, Behaviour>();
  readonly received = new Map<string, { webhookId: string; at: number; status: number | null }[]>();
  readonly open = new Map<string, number>();
  readonly mostOpen = new Map<string, number>();

  route(path: string, behaviour: Behaviour): string {
    this.behaviour.set(path, behaviour);
    this.received.set(path, []);
    return `${this.url}${path}`;
  }

  /** Webhook-ids answered 2xx, with how many times each was. */
  delivered(path: string): Map<string, number> {
    const counts = new Map<string, number>();
    for (const entry of this.received.get(path) ?? []) {
      if (entry.status !== null && entry.status < 300)
        counts.set(entry.webhookId, (counts.get(entry.webhookId) ?? 0) + 1);
    }
    return counts;
  }

  protected async handle(request: http.IncomingMessage, response: http.ServerResponse) {
    for await (const _chunk of request);
    const path = request.url ?? '';
    const behaviour = this.behaviour.get(path) ?? { status: 404 };
    const entry = { webhookId: String(request.headers['webhook-id']), at: Date.now(), status: null as number | null };
    this.received.get(path)?.push(entry);
    if (behaviour === 'hang') return;
    const open = (this.open.get(path) ?? 0) + 1;
    this.open.set(path, open);
    this.mostOpen.set(path, Math.max(open, this.mostOpen.get(path) ?? 0));
    if (behaviour.delayMs) await new Promise((resolve) => setTimeout(resolve, behaviour.delayMs));
    this.open.set(path, (this.open.get(path) ?? 1) - 1);
    entry.status = behaviour.status;
    response.writeHead(behaviour.status, { 'content-type': 'application/json' }).end('{}');
  }
}

/** GETs console pages (their HTML) with a session signed in with the admin token. */
async function consolePages(target: TestService) {
  const admin = target.apps.admin!;
  const signedIn = await admin.inject({
    method: 'POST',
    url: '/console/sign-in',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: `token=${TEST_ADMIN_TOKEN}`,
  });
  const cookie = signedIn.cookies.map(({ name, value }) => `${name}=${value}`).join('; ');
  return async (path: string) =>
    (await admin.inject({ method: 'GET', url: `/console${path}`, headers: { cookie } })).body;
}

describe('payment request worker', () => {
  const endpoints = new Endpoints();
  let service: TestService | undefined;
  const others: RunningService[] = [];

  afterEach(async () => {
    for (const other of others.splice(0)) await other.close();
    await service?.stop();
    service = undefined;
  });
  beforeAll(() => endpoints.start());
  afterAll(() => endpoints.stop());

  async function tenantAt(target: TestService, path: string, behaviour: Behaviour) {
    const tenant = await target.createTenant({ gateway: 'tap' });
    const url = endpoints.route(path, behaviour);
    await target.admin('PATCH', `/tenants/${tenant.tenant.id}`, { payment_endpoint_url: url });
    return tenant;
  }

  it("keeps a hung endpoint's requests from delaying another tenant's", async () => {
    service = await startTestService({ PAYMENT_WORKER_CONCURRENCY: '10', PAYMENT_ENDPOINT_CONCURRENCY: '2' });
    const hung = await tenantAt(service, '/hung', 'hang');
    const healthy = await tenantAt(service, '/healthy', { status: 200 });
    for (let i = 0; i < 20; i++) await createInvoice(service, hung);
    await waitFor('the hung endpoint holding its slots', () => endpoints.received.get('/hung')!.length >= 2);

    const delays: number[] = [];
    for (let i = 0; i < 5; i++) {
      const createdAt = Date.now();
      const invoice = await createInvoice(service, healthy);
      const arrival = await waitFor('the healthy request', () =>
        endpoints.received.get('/healthy')!.find((entry) => entry.webhookId === `msg_${invoice.id}`),
      );
      delays.push(arrival.at - createdAt);
    }
    // A batch waiting for the slowest would hold these for the 15 s answer timeout.
    expect(Math.max(...delays)).toBeLessThan(1000);
    // The hung endpoint had no more than its share of requests.
    expect(endpoints.received.get('/hung')!.length).toBe(2);
  });

  it('opens a breaker after a run of failures, probes, and closes it: every request delivered once', async () => {
    service = await startTestService({
      PAYMENT_RETRY_BASE_SECONDS: '0.5',
      PAYMENT_ENDPOINT_CONCURRENCY: '1',
      PAYMENT_BREAKER_FAILURES: '3',
      PAYMENT_BREAKER_COOL_DOWN_SECONDS: '0.5',
    });
    const flaky = await tenantAt(service, '/flaky', { status: 500 });
    const invoices = [];
    for (let i = 0; i < 6; i++) invoices.push(await createInvoice(service, flaky));
    const tenantPath = `/tenants/${flaky.tenant.id}`;
    const opened = await waitFor('the breaker to open', async () => {
      const { payment_endpoint_breaker: breaker } = (await service!.admin('GET', tenantPath)).json();
      return breaker.state !== 'closed' && breaker;
    });
    expect(opened.history[0]).toMatchObject({ event: 'opened', consecutive_failures: 3 });
    // The partner sees the same breaker beside its payment request.
    const partnerView = await fetch(`${service.urls.integrations}/api/v1/payment-requests/${invoices[0].id}/`, {
      headers: { authorization: `Api-Key ${flaky.credentials.sso_hmac_secret}` },
    });
    const { data } = (await partnerView.json()) as { data: { endpoint_breaker: { state: string } | null } };
    expect(data.endpoint_breaker?.state).not.toBe('closed');
    const metrics = await service.apps.admin!.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: `Bearer ${service.context.config.adminToken}` },
    });
    expect(metrics.body).toMatch(/^payment_endpoint_breakers_open [1-9]/m);
    const console = await consolePages(service);
    // Open, or half-open once the cool-down has passed and the probe is under way: both are failing.
    expect(await console(tenantPath)).toMatch(/open: requests wait for a probe|half-open: probe under way/);
    expect(await console('/')).toContain(`/console${tenantPath}`);

    // While open, only probes reach the endpoint: one per cool-down, far fewer than the waiting requests.
    const sentWhenOpened = endpoints.received.get('/flaky')!.length;
    await waitFor('a failed probe', async () => {
      const { payment_endpoint_breaker: breaker } = (await service!.admin('GET', tenantPath)).json();
      return breaker.history.some((event: { event: string }) => event.event === 'probe_failed');
    });
    expect(endpoints.received.get('/flaky')!.length - sentWhenOpened).toBeLessThanOrEqual(2);

    endpoints.behaviour.set('/flaky', { status: 200 });
    await waitFor('every invoice delivered', () => endpoints.delivered('/flaky').size === invoices.length, 20_000);
    const { payment_endpoint_breaker: closed } = (await service.admin('GET', tenantPath)).json();
    expect(closed.state).toBe('closed');
    expect(closed.history[0].event).toBe('closed');
    expect([...endpoints.delivered('/flaky').values()].every((times) => times === 1)).toBe(true);
    for (const invoice of invoices) {
      const { deliveries } = await showInvoice(service, invoice.id);
      expect(deliveries.filter((delivery) => delivery.http_status === 200)).toHaveLength(1);
    }
  });

  /** The states of the tenant's payment requests, with how many are in each. */
  async function requestStates(target: TestService, tenantId: string) {
    const { rows } = await target.context.database.executeSql<{ state: string; count: number }>(
      'select state, count(*)::int as count from payment_requests where tenant_id = $1 group by state',
      [tenantId],
    );
    return Object.fromEntries(rows.map((row) => [row.state, row.count]));
  }

  it("sends a failing endpoint none of a place's next requests: they go back to the take, whose breaker stops them", async () => {
    service = await startTestService({ PAYMENT_WORKER: 'false' });
    const failing = await tenantAt(service, '/failing', { status: 503 });
    // A backlog, so that the place is taken holding several of them.
    for (let i = 0; i < 10; i++) await createInvoice(service, failing);
    const config = loadConfig(
      testEnv(service.database.target, {
        PAYMENT_ENDPOINT_CONCURRENCY: '1',
        PAYMENT_BREAKER_FAILURES: '3',
        PAYMENT_BREAKER_COOL_DOWN_SECONDS: '600',
      }),
    );
    others.push(await startService(config, createLogger('silent')));
    await waitFor('the breaker to open, and nothing held', async () => {
      const { payment_endpoint_breaker: breaker } = (
        await service!.admin('GET', `/tenants/${failing.tenant.id}`)
      ).json();
      return breaker.state === 'open' && !(await requestStates(service!, failing.tenant.id)).taken;
    });
    // The failures that opened the breaker, and no more.
    expect(endpoints.received.get('/failing')).toHaveLength(3);
    expect(await requestStates(service, failing.tenant.id)).toEqual({ waiting: 10 });
  });

  it("keeps a slow endpoint's places shallow, so that they end soon: two requests each at most", async () => {
    service = await startTestService({ PAYMENT_WORKER: 'false' });
    const slow = await tenantAt(service, '/shallow', { status: 200, delayMs: 150 });
    const invoices = [];
    for (let i = 0; i < 16; i++) invoices.push(await createInvoice(service, slow));
    const config = loadConfig(testEnv(service.database.target, { PAYMENT_ENDPOINT_CONCURRENCY: '2' }));
    others.push(await startService(config, createLogger('silent')));
    let mostHeld = 0;
    await waitFor('every invoice delivered', async () => {
      mostHeld = Math.max(mostHeld, (await requestStates(service!, slow.tenant.id)).taken ?? 0);
      return endpoints.delivered('/shallow').size === invoices.length;
    });
    // Two places, each with the request in flight and the next.
    expect(mostHeld).toBeGreaterThan(0);
    expect(mostHeld).toBeLessThanOrEqual(4);
  });

  it('stops by giving back what its places hold unsent, after the requests in flight', async () => {
    service = await startTestService({ PAYMENT_WORKER: 'false' });
    const slow = await tenantAt(service, '/stopping', { status: 200, delayMs: 200 });
    for (let i = 0; i < 10; i++) await createInvoice(service, slow);
    const config = loadConfig(testEnv(service.database.target, { PAYMENT_ENDPOINT_CONCURRENCY: '1' }));
    const stopping = await startService(config, createLogger('silent'));
    await waitFor('the first request in flight', () => endpoints.received.get('/stopping')!.length > 0);
    await stopping.close();
    const states = await requestStates(service, slow.tenant.id);
    // Sent and recorded, or waiting for the next worker: none held by the stopped one.
    expect(states).toEqual({ done: endpoints.delivered('/stopping').size, waiting: expect.any(Number) });
    expect(states.done + states.waiting).toBe(10);
    expect(states.done).toBeLessThan(3);
  });

  it('never has more requests in flight to one endpoint than the limit, across two instances', async () => {
    service = await startTestService({ PAYMENT_ENDPOINT_CONCURRENCY: '2' });
    const config = loadConfig(testEnv(service.database.target, { PAYMENT_ENDPOINT_CONCURRENCY: '2' }));
    others.push(await startService(config, createLogger('silent')));
    const slow = await tenantAt(service, '/slow', { status: 200, delayMs: 100 });
    const invoices = [];
    for (let i = 0; i < 30; i++) invoices.push(await createInvoice(service, slow));
    await waitFor('every invoice delivered', () => endpoints.delivered('/slow').size === invoices.length, 20_000);
    expect(endpoints.mostOpen.get('/slow')).toBe(2);
  });

  it('takes no more once a place is handed on: a backlog for one endpoint goes out without a take per request', async () => {
    service = await startTestService({ PAYMENT_WORKER: 'false' });
    const backlog = await tenantAt(service, '/backlog', { status: 200 });
    const invoices = [];
    for (let i = 0; i < 20; i++) invoices.push(await createInvoice(service, backlog));
    const takes = vi.spyOn(PaymentRequests.prototype, 'take');
    try {
      const config = loadConfig(testEnv(service.database.target, { PAYMENT_ENDPOINT_CONCURRENCY: '1' }));
      others.push(await startService(config, createLogger('silent')));
      await waitFor('every invoice delivered', () => endpoints.delivered('/backlog').size === invoices.length);
      // The first take, and those of the worker's once-a-second look: not one after each delivery.
      expect(takes.mock.calls.length).toBeLessThan(invoices.length / 2);
    } finally {
      takes.mockRestore();
    }
  });

  it("delivers the requests release 1.0.0 enqueued in pg-boss's queue beside new ones, once each, within the limit", async () => {
    service = await startTestService({ PAYMENT_WORKER: 'false' });
    const mixed = await tenantAt(service, '/mixed', { status: 200, delayMs: 50 });
    const invoices = [];
    for (let i = 0; i < 12; i++) invoices.push(await createInvoice(service, mixed));
    // Half of them as release 1.0.0 enqueues: a job in pg-boss's queue, no row of ours.
    await service.context.database.executeSql(PGBOSS_JOB_TABLE);
    const { rows } = await service.context.database.executeSql(
      `with old as (delete from payment_requests where invoice_id = any($1::uuid[]) returning invoice_id)
       insert into pgboss.job (name, data)
       select 'payment-request', jsonb_build_object('invoice_id', invoice_id, 'attempt', 1) from old returning id`,
      [invoices.filter((_, index) => index % 2 === 0).map((invoice) => invoice.id)],
    );
    expect(rows).toHaveLength(6);
    const config = loadConfig(testEnv(service.database.target, { PAYMENT_ENDPOINT_CONCURRENCY: '2' }));
    others.push(await startService(config, createLogger('silent')));
    await waitFor('every invoice delivered', () => endpoints.delivered('/mixed').size === invoices.length, 20_000);
    expect([...endpoints.delivered('/mixed').values()].every((times) => times === 1)).toBe(true);
    expect(endpoints.mostOpen.get('/mixed')).toBe(2);
  });

  it("delivers a killed worker's requests in flight soon after a restart", async () => {
    const database = await copyTemplateDatabase(inject('databaseTemplate'));
    const env = testEnv(database.target);
    const killed = await startServiceProcess(env);
    const admin = async (method: string, path: string, body: unknown) => {
      const response = await fetch(`${killed.urls.admin}/admin/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return response.json();
    };
    let restarted: RunningService | undefined;
    try {
      const slug = `killed-${Date.now()}`;
      const tenant = await admin('POST', '/tenants', { name: slug, slug, gateway: 'tap' });
      const url = endpoints.route('/killed', 'hang');
      await admin('PATCH', `/tenants/${tenant.tenant.id}`, { payment_endpoint_url: url });
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const created = await admin('POST', '/invoices', {
          tenant_id: tenant.tenant.id,
          amount: '10.00',
          currency: 'SAR',
        });
        ids.push(created.invoice.id);
      }
      await waitFor('the requests in flight', () => endpoints.received.get('/killed')!.length === 3);
      await killed.stop('SIGKILL');

      endpoints.behaviour.set('/killed', { status: 200 });
      const restartedAt = Date.now();
      restarted = await startService(loadConfig(env), createLogger('silent'));
      // Once the dead worker has been silent for 10 s: long before the job timeout
      // (PAYMENT_JOB_TIMEOUT_SECONDS, 120 s) would have given them back.
      await waitFor('the requests delivered', () => endpoints.delivered('/killed').size === 3, 20_000);
      expect(Date.now() - restartedAt).toBeLessThan(20_000);
      expect([...endpoints.delivered('/killed').keys()].sort()).toEqual(ids.map((id) => `msg_${id}`).sort());
    } finally {
      await killed.stop('SIGKILL');
      await restarted?.close();
      await database.drop();
    }
  });
});
