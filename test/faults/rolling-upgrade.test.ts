// Rolling upgrades (docs/architecture.md, "Schema changes"): the last release recorded in RELEASES
// keeps working on the schema this code migrates to, so instances of both may run side by side.
// First the previous release alone on this code's schema: its callback, listings and payment
// requests. Then the real thing: two instances of the previous release behind the nginx of
// deploy/nginx/, under continuous callback, listing and invoice load, replaced one at a time by
// this code (SIGTERM, start, ready, next): no callback or listing fails, every invoice asked for
// is created once (an admin POST is retried with its idempotency key), every callback answered
// `success` is stored exactly once, and every invoice's payment request reaches the partner
// exactly once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN_TOKEN, testEnv } from '../support/env.js';
import { loggedRequests, type ServiceProcess, startServiceProcess } from '../support/process.js';
import { CallbackLoad, createPartner, type Partner } from './support/callback-load.js';
import { DATABASE_KINDS, type ScenarioDatabase, scenarioDatabase } from './support/databases.js';
import { checkInvariants, withDatabase } from './support/invariants.js';
import {
  behindProxyEnv,
  EXAMPLE_FAIL_TIMEOUT_MS,
  NginxProxy,
  nginxUnavailable,
  type SlotPorts,
  slotPorts,
} from './support/nginx.js';
import { PartnerEndpoint, waitFor } from './support/probes.js';
import { InvoiceLoad, ListingLoad } from './support/read-load.js';
import { builtRelease, lastRecordedRelease } from './support/releases.js';

const CALLBACK = '/api/v1/payments/notify/';
/** A request the load sends through nginx to each listener: the integrations, backend and admin ports. */
const PROXIED = { integrations: CALLBACK, backend: '/v1/cities/?limit=5', admin: '/admin/v1/invoices' };
const BUILD_TIMEOUT_MS = 10 * 60_000;
const previous = lastRecordedRelease();
const unavailable = nginxUnavailable ?? (DATABASE_KINDS.includes('PostgreSQL') ? null : 'no PostgreSQL cluster');
if (unavailable) console.log(`[faults] rolling upgrade skipped: ${unavailable}`);

async function admin(url: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${url}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

/** A tenant whose payment endpoint is `endpointUrl`, and a backend key reading countries and cities. */
async function payingTenant(adminUrl: string, endpointUrl: string) {
  const slug = `rolling-${Math.random().toString(36).slice(2, 10)}`;
  const { tenant } = await admin(adminUrl, 'POST', '/tenants', { name: slug, slug, gateway: 'tap' });
  await admin(adminUrl, 'PATCH', `/tenants/${tenant.id}`, { payment_endpoint_url: endpointUrl });
  const { key } = await admin(adminUrl, 'POST', '/partner-keys', {
    name: slug,
    scopes: ['countries:read', 'cities:read'],
  });
  return { tenantId: tenant.id as string, backendKey: key as string };
}

/** Invoices whose payment request the partner received other than once. */
function deliveryProblems(endpoint: PartnerEndpoint, invoiceIds: string[]) {
  const received = new Map<string, number>();
  for (const request of endpoint.received) received.set(request.invoiceId, (received.get(request.invoiceId) ?? 0) + 1);
  return {
    lost: invoiceIds.filter((id) => !received.has(id)).length,
    twice: invoiceIds.filter((id) => (received.get(id) ?? 0) > 1).length,
    delivered: invoiceIds.filter((id) => received.get(id) === 1).length,
  };
}

describe.skipIf(unavailable)(`the previous release (${previous.version}) beside this code`, () => {
  let releaseDir: string;
  const databases: ScenarioDatabase[] = [];
  const processes: ServiceProcess[] = [];
  const endpoint = new PartnerEndpoint();
  let proxy: NginxProxy | undefined;

  beforeAll(async () => {
    const started = Date.now();
    releaseDir = builtRelease(previous);
    console.log(`[faults] release ${previous.version} (${previous.commit}) ready in ${Date.now() - started} ms`);
    await endpoint.start();
  }, BUILD_TIMEOUT_MS);
  afterAll(async () => {
    await Promise.all(processes.map((service) => service.stop('SIGKILL')));
    await proxy?.stop();
    await endpoint.stop();
    await Promise.all(databases.map((database) => database.drop()));
  });

  it("serves its callback, listings and payment requests on this code's schema", async () => {
    // The template was migrated by this code: every migration of this code is applied.
    const database = await scenarioDatabase('PostgreSQL');
    databases.push(database);
    const service = await startServiceProcess(testEnv(database.target), 3, { releaseDir });
    processes.push(service);
    const partner = await createPartner(service.urls.admin, 5);
    const { tenantId, backendKey } = await payingTenant(service.urls.admin, endpoint.url);

    const load = new CallbackLoad(`${service.urls.integrations}${CALLBACK}`, partner, { rate: 50 });
    load.start();
    await waitFor('callbacks stored', () => load.count(200) >= 50);
    await load.stop();
    await load.settle();
    const cities = await fetch(`${service.urls.backend}/v1/cities/?limit=5`, {
      headers: { authorization: `Api-Key ${backendKey}` },
    });
    const countries = await fetch(`${service.urls.integrations}/api/v1/countries/?limit=5`, {
      headers: { authorization: `Api-Key ${partner.ssoSecret}` },
    });
    const { invoice } = await admin(service.urls.admin, 'POST', '/invoices', {
      tenant_id: tenantId,
      amount: '25.00',
      currency: 'SAR',
    });
    await waitFor('the payment request at the partner', () => deliveryProblems(endpoint, [invoice.id]).delivered === 1);
    expect(await service.stop('SIGTERM')).toBe(0);
    const report = await withDatabase(database.target, (query) => checkInvariants(query, partner, load));
    console.log(
      `[faults] ${previous.version} on this schema: callbacks ${load.describe()}, listings ${cities.status}/${countries.status}, ` +
        `payment request delivered, invariants ${report.violations.length ? 'VIOLATED' : 'all held'}`,
    );
    expect(cities.status).toBe(200);
    expect(countries.status).toBe(200);
    expect(report.violations).toEqual([]);
  });

  it('is replaced instance by instance under load, with nothing failed, lost or doubled', async () => {
    const database = await scenarioDatabase('PostgreSQL', { empty: true });
    databases.push(database);
    const slots: SlotPorts[] = [await slotPorts(), await slotPorts()];
    proxy = await NginxProxy.start(slots);
    const envOf = (slot: SlotPorts) => testEnv(database.target, behindProxyEnv(proxy!, slot));
    // The previous release creates the database, as it did in production.
    const instances: ServiceProcess[] = [];
    for (const slot of slots) {
      instances.push(await startServiceProcess(envOf(slot), 3, { releaseDir }));
      processes.push(instances[instances.length - 1]);
    }
    const partner: Partner = await createPartner(instances[0].urls.admin, 20);
    const { tenantId, backendKey } = await payingTenant(instances[0].urls.admin, endpoint.url);

    const callbacks = new CallbackLoad(`${proxy.publicUrl('integrations')}${CALLBACK}`, partner, {
      rate: 40,
      concurrency: 8,
      timeoutMs: 10_000,
      fetch: proxy.request,
    });
    const listings = new ListingLoad(
      proxy.request,
      [
        { url: `${proxy.publicUrl('backend')}${PROXIED.backend}`, authorization: `Api-Key ${backendKey}` },
        {
          url: `${proxy.publicUrl('integrations')}/api/v1/countries/?limit=5`,
          authorization: `Api-Key ${partner.ssoSecret}`,
        },
      ],
      20,
    );
    // Enough invoices that the first new instance's migrations meet the old one's transactions.
    const invoices = new InvoiceLoad(proxy.request, proxy.publicUrl('admin'), tenantId, 40);
    for (const load of [callbacks, listings, invoices]) load.start();
    const loadFor = async (accepted: number) => {
      const target = callbacks.count(200) + accepted;
      await waitFor(`${accepted} more callbacks`, () => callbacks.count(200) >= target, 60_000);
    };
    await loadFor(80);

    const swaps: string[] = [];
    for (const [index, slot] of slots.entries()) {
      const started = Date.now();
      const code = await instances[index].stop('SIGTERM');
      const stoppedMs = Date.now() - started;
      instances[index] = await startServiceProcess(envOf(slot));
      processes.push(instances[index]);
      // The steps of docs/deploy.md, "Rolling upgrade". 2: ready, and the new build answering.
      await waitFor('the new instance ready', async () => (await fetch(`${instances[index].urls.admin}/readyz`)).ok);
      const health = await (await fetch(`${instances[index].urls.admin}/healthz`)).json();
      expect(health.commit).not.toBe(previous.commit);
      // 3: nginx's checks are passive, and it marked each port of the stopped instance failed on
      // its own: it tries each again only fail_timeout after the last failure, which came before
      // the new instance was ready. Then every port the proxy serves shows proxied requests.
      await new Promise((resolve) => setTimeout(resolve, EXAMPLE_FAIL_TIMEOUT_MS));
      await waitFor('nginx sending the new instance requests on every port', () =>
        Object.values(PROXIED).every((url) => loggedRequests(instances[index], url) > 0),
      );
      swaps.push(`${Date.now() - started} ms (exit ${code} after ${stoppedMs} ms)`);
      expect(code).toBe(0);
      await loadFor(80);
    }
    for (const load of [callbacks, listings, invoices]) await load.stop();
    await callbacks.settle();
    const delivered = await waitFor(
      'every payment request at the partner',
      () => {
        const problems = deliveryProblems(endpoint, invoices.invoiceIds);
        return problems.lost === 0 && problems;
      },
      60_000,
    ).catch(() => deliveryProblems(endpoint, invoices.invoiceIds));

    const report = await withDatabase(database.target, (query) => checkInvariants(query, partner, callbacks));
    const stored = await withDatabase(database.target, async (query) => ({
      events: Number(
        (await query('select count(*) from payment_events where tenant_id = $1', [partner.tenantId]))[0].count,
      ),
      invoices: Number((await query('select count(*) from invoices where tenant_id = $1', [tenantId]))[0].count),
    }));
    const accepted = (status: string) =>
      callbacks.notifications.filter((notification) => notification.accepted === status).length;
    const successes = accepted('success');
    // A first 200 of `duplicate`: an earlier try was stored, and its answer lost on the way.
    const duplicates = accepted('duplicate');
    const callbackFailed = callbacks.sent - callbacks.count(200);
    // Each new instance's migrations, beside the other instance's transactions (src/db/migrate.ts).
    const gaveWay = instances.reduce(
      (count, instance) =>
        count +
        instance
          .output()
          .split('\n')
          .filter((line) => line.includes('migrations gave way')).length,
      0,
    );
    console.log(
      `[faults] rolling upgrade ${previous.version} → this code behind nginx: ` +
        `callbacks sent ${callbacks.sent} (${callbacks.describe()}), failed ${callbackFailed}, ` +
        `accepted success ${successes} (first answered duplicate ${duplicates}), stored ${stored.events}; ` +
        `listings sent ${listings.tally.sent} (${listings.tally.describe()}), failed ${listings.tally.failed(200)}; ` +
        `invoices created ${invoices.invoiceIds.length} (stored ${stored.invoices}; admin requests ${invoices.tally.describe()}), ` +
        `payment requests delivered ${delivered.delivered}, lost ${delivered.lost}, sent twice ${delivered.twice}; ` +
        `swaps ${swaps.join(', ')}; migrations gave way ${gaveWay}×; invariants ${report.violations.length ? `VIOLATED ${report.violations.slice(0, 5).join('; ')}` : 'all held'}`,
    );
    expect(callbackFailed).toBe(0);
    expect(listings.tally.failed(200)).toBe(0);
    expect(report.violations).toEqual([]);
    expect(stored.events).toBe(successes + duplicates);
    expect(stored.invoices).toBe(invoices.invoiceIds.length);
    expect(delivered).toEqual({ lost: 0, twice: 0, delivered: invoices.invoiceIds.length });
  });
});
