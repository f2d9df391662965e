// The database away under mixed traffic (issue 35, DECISIONS section 11), on both engines: the
// server stopped, killed, and hung (SIGSTOP) for longer than the request deadline. Partners read
// with credentials the service has not cached, callbacks arrive, operators use the admin API and
// create invoices whose payment requests are in flight. Every request is answered within the
// deadline and a margin (a 503 with Retry-After while the database is away), the process lives on,
// nothing answered success is lost or stored twice, and full service is back within seconds.
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { TEST_ADMIN_TOKEN, testEnv } from '../support/env.js';
import { type ServiceProcess, startServiceProcess } from '../support/process.js';
import { CallbackLoad, createPartner } from './support/callback-load.js';
import { clusterDirOf, postmasterOf, signalServer } from './support/database-server.js';
import { DATABASE_KINDS, type ScenarioDatabase, scenarioDatabase } from './support/databases.js';
import { checkInvariants, withDatabase } from './support/invariants.js';
import { PostgresCluster } from './support/postgres-cluster.js';
import { PartnerEndpoint, waitFor } from './support/probes.js';
import {
  everyLoadBackAfter,
  firstSuccessAfter,
  InvoiceLoad,
  ListingLoad,
  type Requests,
  type Tally,
} from './support/read-load.js';

/** The service's DATABASE_REQUEST_TIMEOUT_MS here: small, so that a hang outlasts it quickly. */
const DEADLINE_MS = 1000;
/** What an answer may take beyond the deadline: writing it, on a machine shared with other work; less than a second deadline in turn. */
const MARGIN_MS = 900;
/** How long the database stays away (stopped, or hung); a killed embedded server comes back by itself. */
const FAULT_MS = 4 * DEADLINE_MS;
/** "Within seconds": full service again this long after the database is back at the latest. */
const BACK_WITHIN_MS = 10_000;
/** Keys presented in turn by each reader, more than it sends in the credential cache's lifetime. */
const READ_KEYS = 6;

const FAULTS = ['stopped', 'killed', 'hung'] as const;
type Fault = (typeof FAULTS)[number];

const clusterOfTheSuite = inject('postgresCluster');
const cluster = clusterOfTheSuite && PostgresCluster.attach(clusterOfTheSuite.dataDir, clusterOfTheSuite.port);

const admin = (url: string, path: string, body: unknown) =>
  fetch(`${url}/admin/v1${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  }).then((response) => response.json());

/**
 * Breaks the database as `fault` says and brings it back (the embedded server stopped or killed is
 * started again by the service itself); resolves when it accepts connections again, with that time.
 */
async function breakDatabase(kind: ScenarioDatabase['kind'], fault: Fault, clusterDir: string): Promise<number> {
  const before = postmasterOf(clusterDir)!.pid;
  const pause = () => new Promise((resolve) => setTimeout(resolve, FAULT_MS));
  if (fault === 'hung') {
    const frozen = signalServer(clusterDir, 'SIGSTOP');
    await pause();
    for (const pid of frozen) process.kill(pid, 'SIGCONT');
    return Date.now();
  }
  if (kind === 'PostgreSQL') {
    if (fault === 'stopped') cluster!.stop();
    else cluster!.kill();
    await pause();
    cluster!.start();
  } else {
    // Fast shutdown, as an operator's `pg_ctl stop` would; a crash.
    signalServer(clusterDir, fault === 'stopped' ? 'SIGINT' : 'SIGKILL');
  }
  const back = await waitFor(
    'the database back',
    () => {
      const postmaster = postmasterOf(clusterDir);
      return postmaster?.ready && postmaster.pid !== before && Date.now();
    },
    60_000,
  );
  return back;
}

describe.each(DATABASE_KINDS)('%s away under mixed traffic', (kind) => {
  let database: ScenarioDatabase;
  let service: ServiceProcess | undefined;
  let running: (ListingLoad | InvoiceLoad | CallbackLoad)[] = [];
  const partnerEndpoint = new PartnerEndpoint();

  beforeAll(() => partnerEndpoint.start());
  afterAll(() => partnerEndpoint.stop());
  afterEach(async () => {
    await Promise.all(running.map((load) => load.stop()));
    running = [];
    if (service && service.child.exitCode !== null) {
      console.log(`[faults] the service exited (${service.child.exitCode}):\n${service.output().slice(-4000)}`);
    }
    await service?.stop('SIGKILL');
    service = undefined;
    // Running again for whatever comes next, whatever happened here.
    if (kind === 'PostgreSQL' && cluster) {
      const postmaster = postmasterOf(cluster.dataDir);
      if (postmaster) signalServer(cluster.dataDir, 'SIGCONT');
      if (!cluster.isRunning()) cluster.start();
    }
    await database?.drop();
  });

  it.each(FAULTS)('the server %s: every request answered in time, nothing lost, back within seconds', async (fault) => {
    database = await scenarioDatabase(kind);
    const clusterDir = clusterDirOf(database.target, cluster?.dataDir);
    service = await startServiceProcess(
      testEnv(database.target, {
        DATABASE_REQUEST_TIMEOUT_MS: String(DEADLINE_MS),
        PAYMENT_RETRY_BASE_SECONDS: '0.5',
        RATE_LIMIT_PER_MINUTE: '0',
      }),
    );
    const urls = service.urls;
    const partner = await createPartner(urls.admin, 20, partnerEndpoint.url);
    const readers = await Promise.all(Array.from({ length: READ_KEYS }, () => createPartner(urls.admin, 0)));
    const partnerKeys: { key: string }[] = await Promise.all(
      Array.from({ length: READ_KEYS }, (_, i) =>
        admin(urls.admin, '/partner-keys', { name: `outage-${i}`, scopes: ['countries:read'] }),
      ),
    );
    // Each key presented every READ_KEYS / 3 s: longer than the credential cache keeps it.
    const tallied = (name: string, load: { tally: Tally }) => ({ name, requests: load.tally.requests });
    const integrationsReads = new ListingLoad(
      fetch,
      readers.map((reader) => ({
        url: `${urls.integrations}/api/v1/countries/?limit=5`,
        authorization: `Api-Key ${reader.ssoSecret}`,
      })),
      3,
    );
    const backendReads = new ListingLoad(
      fetch,
      partnerKeys.map(({ key }) => ({ url: `${urls.backend}/v1/countries/`, authorization: `Api-Key ${key}` })),
      3,
    );
    const adminReads = new ListingLoad(
      fetch,
      [{ url: `${urls.admin}/admin/v1/tenants`, authorization: `Bearer ${TEST_ADMIN_TOKEN}` }],
      3,
    );
    const invoices = new InvoiceLoad(fetch, urls.admin, partner.tenantId, 2);
    const callbacks = new CallbackLoad(`${urls.integrations}/api/v1/payments/notify/`, partner, {
      rate: 20,
      concurrency: 4,
      timeoutMs: 15_000,
    });
    const loads: Requests[] = [
      tallied('integrations reads', integrationsReads),
      tallied('backend reads', backendReads),
      tallied('admin reads', adminReads),
      tallied('invoices', invoices),
      { name: 'callbacks', requests: callbacks.requests },
    ];
    running = [integrationsReads, backendReads, adminReads, invoices, callbacks];
    for (const load of running) load.start();
    await waitFor('steady traffic', () => loads.every((load) => firstSuccessAfter(load, 0)), 30_000);

    const faultAt = Date.now();
    const backAt = await breakDatabase(kind, fault, clusterDir);
    const normalAt = await waitFor(
      'every kind of request answered success again',
      () => everyLoadBackAfter(loads, backAt),
      BACK_WITHIN_MS + 20_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 2000));
    await Promise.all(running.map((load) => load.stop()));
    running = [];
    await callbacks.settle();
    const alive = service.child.exitCode === null;
    await partnerEndpoint.receivedAll(invoices.invoiceIds, 60_000);
    // A 500's own line first: the embedded server's exit is logged at the same level.
    const errors = service
      .output()
      .split('\n')
      .filter((line) => line.includes('"level":"error"'))
      .sort((a, b) => Number(b.includes('unexpected error')) - Number(a.includes('unexpected error')));
    expect(await service.stop('SIGTERM')).toBe(0);
    service = undefined;

    const report = await withDatabase(database.target, (query) => checkInvariants(query, partner, callbacks));
    const all = loads.flatMap((load) => load.requests);
    const inTime = all.filter((request) => request.ended - request.started <= DEADLINE_MS + MARGIN_MS);
    const unavailable = all.filter((request) => String(request.outcome) === '503');
    const other = loads.flatMap((load) =>
      load.requests
        .filter((request) => !/^(2..|503)$/.test(String(request.outcome)))
        .map((request) => `${load.name}: ${request.outcome}`),
    );
    const lostCallbacks = report.violations.filter((violation) =>
      /answered success but stored 0 times/.test(violation),
    );
    const doubledCallbacks = report.violations.filter((violation) => /stored [2-9]\d* times/.test(violation));
    const deliveries = (id: string) =>
      partnerEndpoint.received.filter((request) => request.invoiceId === id && request.answered).length;
    const lostRequests = invoices.invoiceIds.filter((id) => deliveries(id) === 0);
    const doubledRequests = invoices.invoiceIds.filter((id) => deliveries(id) > 1);
    const slowest = loads.map(
      (load) => `${load.name} ${Math.max(0, ...load.requests.map((request) => request.ended - request.started))}`,
    );
    console.log(
      `[faults] database ${fault} (${kind}): sent ${all.length}, answered within ${DEADLINE_MS + MARGIN_MS} ms ` +
        `${inTime.length}, 503 ${unavailable.length}, other ${other.length}, lost ${lostCallbacks.length + lostRequests.length}, ` +
        `doubled ${doubledCallbacks.length + doubledRequests.length}, process alive ${alive}, ` +
        `away ${((backAt - faultAt) / 1000).toFixed(1)} s, back to normal ${((normalAt - backAt) / 1000).toFixed(1)} s ` +
        `after the database; slowest ms: ${slowest.join(', ')}`,
    );
    expect(alive).toBe(true);
    expect(report.violations).toEqual([]);
    expect(unavailable.length).toBeGreaterThan(0);
    // With the first lines the service logged at error level: the failure then says what the answer was.
    expect({ other, errors: other.length > 0 ? errors.slice(0, 3) : [] }).toEqual({ other: [], errors: [] });
    expect(all.length - inTime.length).toBe(0);
    expect(lostRequests).toEqual([]);
    expect(normalAt - backAt).toBeLessThan(BACK_WITHIN_MS);
  });
});
