// PostgreSQL killed while payment requests are under way (issue 25, item 2): the partner answers
// while the database is gone, so no attempt can be recorded. The process must live on (no
// unhandled rejection), record each attempt once the database is back, and send no request twice.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { TEST_ADMIN_TOKEN, testEnv } from '../support/env.js';
import { type ServiceProcess, startServiceProcess } from '../support/process.js';
import { type ScenarioDatabase, scenarioDatabase } from './support/databases.js';
import { withDatabase } from './support/invariants.js';
import { PostgresCluster } from './support/postgres-cluster.js';
import { PartnerEndpoint, waitFor } from './support/probes.js';

const INVOICES = 20;
/** How long the partner takes to answer each invoice's first request: the database dies meanwhile. */
const ANSWER_DELAY_MS = 1500;
const OUTAGE_MS = 4000;

const clusterOfTheSuite = inject('postgresCluster');

async function admin(base: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${base}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(response.status).toBeLessThan(300);
  return response.json();
}

describe.skipIf(!clusterOfTheSuite)('PostgreSQL killed during payment request attempts', () => {
  // The suite's own cluster (never the shared server): files run one at a time, so nobody else uses it now.
  const cluster = clusterOfTheSuite && PostgresCluster.attach(clusterOfTheSuite.dataDir, clusterOfTheSuite.port);
  let database: ScenarioDatabase;
  let service: ServiceProcess | undefined;
  const partner = new PartnerEndpoint();

  beforeAll(async () => {
    database = await scenarioDatabase('PostgreSQL');
    await partner.start();
  });
  afterAll(async () => {
    await service?.stop('SIGKILL');
    await partner.stop();
    if (cluster && !cluster.isRunning()) cluster.start();
    await database?.drop();
  });

  it('lives on, records every attempt once the database is back, and sends none twice', async () => {
    if (!cluster) return;
    const { databaseUrl } = database.target as { databaseUrl: string };
    service = await startServiceProcess(testEnv({ databaseUrl }, { PAYMENT_RETRY_BASE_SECONDS: '0.5' }));
    const base = service.urls.admin;
    const slug = `faults-${Math.random().toString(36).slice(2, 10)}`;
    const { tenant } = await admin(base, 'POST', '/tenants', { name: slug, slug, gateway: 'tap' });
    await admin(base, 'PATCH', `/tenants/${tenant.id}`, { payment_endpoint_url: partner.url });
    partner.firstDelayMs = ANSWER_DELAY_MS;
    const invoiceIds: string[] = [];
    for (let i = 0; i < INVOICES; i++) {
      invoiceIds.push(
        (await admin(base, 'POST', '/invoices', { tenant_id: tenant.id, amount: '10.00', currency: 'SAR' })).invoice.id,
      );
    }
    await waitFor('every request under way', () => new Set(partner.received.map((r) => r.invoiceId)).size === INVOICES);

    cluster.kill();
    const killedAt = Date.now();
    // The partner answers while the database is gone: every attempt finishes unrecorded.
    await waitFor('the answers', () => partner.received.filter((r) => r.answered).length >= INVOICES, 10_000);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, OUTAGE_MS - (Date.now() - killedAt))));
    cluster.start();

    const recorded = () =>
      withDatabase({ databaseUrl }, (query) =>
        query<{ invoice_id: string; delivered: number }>(
          `select invoice_id::text, count(*) filter (where http_status = 200)::int as delivered
             from payment_deliveries where invoice_id = any($1::uuid[]) group by invoice_id`,
          [invoiceIds],
        ),
      );
    const rows = await waitFor(
      'every attempt recorded',
      async () => {
        const found = await recorded();
        return found.filter((row) => row.delivered > 0).length === INVOICES && found;
      },
      60_000,
    );
    const answered = new Map<string, number>();
    for (const request of partner.received.filter((r) => r.answered)) {
      answered.set(request.invoiceId, (answered.get(request.invoiceId) ?? 0) + 1);
    }
    const figures = {
      sent: partner.received.length,
      delivered: answered.size,
      lost: invoiceIds.filter((id) => !answered.has(id)).length,
      doubled: [...answered.values()].filter((times) => times > 1).length,
      recordedTwice: rows.filter((row) => row.delivered > 1).length,
    };
    console.log(
      `[faults] PostgreSQL killed mid-attempt: ${INVOICES} invoices, outage ${OUTAGE_MS} ms: requests sent ${figures.sent}, ` +
        `delivered ${figures.delivered}, lost ${figures.lost}, doubled ${figures.doubled}, recorded twice ${figures.recordedTwice}`,
    );
    expect(service.child.exitCode).toBeNull();
    expect(service.output()).not.toMatch(/unhandled|uncaught/i);
    expect(figures).toEqual({ sent: INVOICES, delivered: INVOICES, lost: 0, doubled: 0, recordedTwice: 0 });
    expect(await service.stop('SIGTERM')).toBe(0);
  });
});
