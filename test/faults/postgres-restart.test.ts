// PostgreSQL stopped and started again under a steady callback load, against a running service:
// during the outage the callback answers a clear 503 within a bounded time (never a 200 for
// something not stored), /readyz turns 503 and back, and the service and its payment worker
// recover by themselves once the database returns.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { TEST_ADMIN_TOKEN, testEnv } from '../support/env.js';
import { type ServiceProcess, startServiceProcess } from '../support/process.js';
import { CallbackLoad, createPartner } from './support/callback-load.js';
import { type ScenarioDatabase, scenarioDatabase } from './support/databases.js';
import { checkInvariants, summary, withDatabase } from './support/invariants.js';
import { PostgresCluster } from './support/postgres-cluster.js';
import { PartnerEndpoint, Prober, waitFor } from './support/probes.js';

const CALLBACK = '/api/v1/payments/notify/';
/** What "answers quickly" means while the database is away. */
const BOUND_MS = 2000;
const OUTAGE_MS = 6000;

const clusterOfTheSuite = inject('postgresCluster');

describe.skipIf(!clusterOfTheSuite)('PostgreSQL restarted under callback load', () => {
  // The suite's own cluster (never the shared server): files run one at a time, so nobody else uses it now.
  const cluster = clusterOfTheSuite && PostgresCluster.attach(clusterOfTheSuite.dataDir, clusterOfTheSuite.port);
  let database: ScenarioDatabase;
  let service: ServiceProcess | undefined;
  const partnerEndpoint = new PartnerEndpoint();

  beforeAll(async () => {
    database = await scenarioDatabase('PostgreSQL');
    await partnerEndpoint.start();
  });
  afterAll(async () => {
    await service?.stop('SIGKILL');
    await partnerEndpoint.stop();
    // Running again for whatever comes next, whatever happened here.
    if (cluster && !cluster.isRunning()) cluster.start();
    await database?.drop();
  });

  it('answers 503 fast while it is down, stores every 200, and recovers without a restart', async () => {
    if (!cluster) return;
    const { databaseUrl } = database.target as { databaseUrl: string };
    service = await startServiceProcess(testEnv({ databaseUrl }, { PAYMENT_RETRY_BASE_SECONDS: '0.5' }));
    const { integrations, admin } = service.urls;
    const partner = await createPartner(admin, 40);
    const load = new CallbackLoad(`${integrations}${CALLBACK}`, partner, { rate: 60, timeoutMs: 10_000 });
    const readiness = new Prober(() => `${integrations}/readyz`, 200, 10_000);
    load.start();
    await waitFor('a steady load', () => load.count(200) >= 100);

    const stoppedAt = Date.now();
    cluster.stop();
    await waitFor('the outage to be seen', () => readiness.firstSince(Date.now() - 500, 503), 5000);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, OUTAGE_MS - (Date.now() - stoppedAt))));
    const sentBeforeReturn = load.sent;
    cluster.start();
    const returnedAt = Date.now();
    const ready = await waitFor('/readyz 200 again', () => readiness.firstSince(returnedAt, 200), 15_000);
    const recoveryMs = ready.at + ready.ms - returnedAt;
    await waitFor('callbacks stored again', () => load.sent > sentBeforeReturn + 60 && load.count(200) > 0);
    await load.stop();
    const probes = await readiness.stop();
    await load.settle();

    // The payment worker resumed too: a new invoice's payment request is delivered.
    const tenant = await fetch(`${admin}/admin/v1/tenants/${partner.tenantId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ payment_endpoint_url: partnerEndpoint.url }),
    });
    expect(tenant.status).toBe(200);
    const [invoice] = (await createPartnerInvoices(admin, partner.tenantId)) as { id: string }[];
    await waitFor('the payment request', () => partnerEndpoint.received.find((r) => r.invoiceId === invoice.id));

    expect(await service.stop('SIGTERM')).toBe(0);
    const report = await withDatabase({ databaseUrl }, (query) => checkInvariants(query, partner, load));
    const outage = probes.filter((probe) => probe.at >= stoppedAt && probe.at < returnedAt);
    console.log(
      summary(
        'PostgreSQL restart',
        load,
        report,
        `outage ${OUTAGE_MS} ms, /readyz back ${recoveryMs} ms after PostgreSQL, ` +
          `/readyz slowest ${Math.max(...outage.map((probe) => probe.ms))} ms during the outage`,
      ),
    );
    expect(report.violations).toEqual([]);
    expect(outage.some((probe) => probe.status === 503)).toBe(true);
    expect(outage.every((probe) => probe.status === 503 || probe.status === 200)).toBe(true);
    expect(Math.max(...outage.map((probe) => probe.ms))).toBeLessThan(BOUND_MS);
    expect(load.count(503)).toBeGreaterThan(0);
    expect([...load.answered.keys()].sort()).toEqual(['200', '503']);
    expect(load.slowestMs).toBeLessThan(BOUND_MS);
    expect(recoveryMs).toBeLessThan(5000);
  });
});

async function createPartnerInvoices(admin: string, tenantId: string) {
  const response = await fetch(`${admin}/admin/v1/invoices`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ tenant_id: tenantId, amount: '10.00', currency: 'SAR' }),
  });
  expect(response.status).toBe(201);
  return [(await response.json()).invoice];
}
