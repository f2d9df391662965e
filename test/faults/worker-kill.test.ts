// The worker killed (SIGKILL) while a payment request is in flight to a slow partner endpoint: the
// request is made again once its lease ends, delivered once, with the same webhook-id, and
// recorded as one attempt.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN_TOKEN, testEnv } from '../support/env.js';
import { type ServiceProcess, startServiceProcess } from '../support/process.js';
import { DATABASE_KINDS, type ScenarioDatabase, scenarioDatabase } from './support/databases.js';
import { withDatabase } from './support/invariants.js';
import { PartnerEndpoint, waitFor } from './support/probes.js';

/** The shortest job timeout allowed: the redelivery comes within about 1.5 times this. */
const JOB_TIMEOUT_SECONDS = 20;

async function admin(url: string, method: string, path: string, body: unknown) {
  const response = await fetch(`${url}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

describe.concurrent('a worker killed during a delivery', () => {
  const databases: ScenarioDatabase[] = [];
  const services: ServiceProcess[] = [];
  const endpoint = new PartnerEndpoint();
  // The partner takes 10 s to answer a first request: the worker is killed meanwhile.
  endpoint.firstDelayMs = 10_000;
  beforeAll(() => endpoint.start());
  afterAll(async () => {
    await Promise.all(services.map((service) => service.stop('SIGKILL')));
    await Promise.all(databases.map((database) => database.drop()));
    await endpoint.stop();
  });

  it.each(DATABASE_KINDS)('on %s: delivered later, once, with the same webhook-id', async (kind) => {
    const database = await scenarioDatabase(kind);
    databases.push(database);
    const env = testEnv(database.target, { PAYMENT_JOB_TIMEOUT_SECONDS: String(JOB_TIMEOUT_SECONDS) });
    const first = await startServiceProcess(env);
    services.push(first);
    const { tenant } = await admin(first.urls.admin, 'POST', '/tenants', {
      name: `worker ${kind}`,
      slug: `worker-${kind.toLowerCase().replaceAll(' ', '-')}`,
      gateway: 'tap',
    });
    await admin(first.urls.admin, 'PATCH', `/tenants/${tenant.id}`, { payment_endpoint_url: endpoint.url });
    const { invoice } = await admin(first.urls.admin, 'POST', '/invoices', {
      tenant_id: tenant.id,
      amount: '42.00',
      currency: 'SAR',
    });
    const received = () => endpoint.received.filter((request) => request.invoiceId === invoice.id);
    await waitFor('the first request at the partner', () => received().length === 1);
    await first.stop('SIGKILL');
    const killedAt = Date.now();

    const second = await startServiceProcess(env);
    services.push(second);
    await waitFor('the request made again', () => received().some((request) => request.answered), 60_000);
    const redeliveredMs = Date.now() - killedAt;
    await waitFor('the attempt recorded', async () => {
      const current = await (
        await fetch(`${second.urls.admin}/admin/v1/invoices/${invoice.id}`, {
          headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
        })
      ).json();
      return current.deliveries.length > 0;
    });
    expect(await second.stop('SIGTERM')).toBe(0);

    const rows = await withDatabase(database.target, async (query) => ({
      deliveries: await query('select attempt, http_status from payment_deliveries where invoice_id = $1', [
        invoice.id,
      ]),
      jobsLeft: await query(`select state from payment_requests where invoice_id = $1 and state <> 'done'`, [
        invoice.id,
      ]),
      paymentUrl: (await query('select payment_url from invoices where id = $1', [invoice.id]))[0].payment_url,
    }));
    const requests = received();
    const violations = [
      ...(requests.length === 2 ? [] : [`${requests.length} requests at the partner, not 2`]),
      ...(requests.filter((request) => request.answered).length === 1 ? [] : ['not exactly one answered request']),
      ...(new Set(requests.map((request) => request.webhookId)).size === 1 ? [] : ['webhook-ids differ']),
      ...(rows.deliveries.length === 1 && rows.deliveries[0].http_status === 200 ? [] : ['not one recorded attempt']),
      ...(rows.jobsLeft.length === 0 ? [] : [`${rows.jobsLeft.length} jobs still queued`]),
      ...(rows.paymentUrl === `https://pay.example.com/${invoice.id}` ? [] : [`payment_url ${rows.paymentUrl}`]),
    ];
    console.log(
      `[faults] worker SIGKILL mid-delivery on ${kind}: partner requests ${requests.length} ` +
        `(answered ${requests.filter((request) => request.answered).length}, webhook-id ${requests[0].webhookId}), ` +
        `rows checked ${rows.deliveries.length + rows.jobsLeft.length + 1}, invariants ${violations.length ? `VIOLATED: ${violations.join('; ')}` : 'all held'}, ` +
        `delivered ${redeliveredMs} ms after the kill (job timeout ${JOB_TIMEOUT_SECONDS} s)`,
    );
    expect(violations, JSON.stringify(rows)).toEqual([]);
  });
});
