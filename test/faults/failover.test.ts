// The primary lost and a synchronous standby promoted (issue 38, DECISIONS section 11), under mixed
// traffic: DATABASE_URL names both servers, primary first. Partners read with credentials the
// service has not cached, callbacks arrive, operators create invoices whose payment requests are in
// flight to the partner. The primary is killed, the standby promoted: the process lives on and
// follows it without a restart, nothing answered success is lost or stored twice, no payment request
// goes out twice under different ids, and reads and callbacks are back within seconds. Twice: with
// DATABASE_URL naming both servers, and through PgBouncer in transaction mode (DATABASE_DIRECT_URL
// naming both), re-pointed at the promoted standby as a failover manager re-points it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testEnv } from '../support/env.js';
import { type ServiceProcess, startServiceProcess } from '../support/process.js';
import { CallbackLoad, createPartner } from './support/callback-load.js';
import { checkInvariants, withDatabase } from './support/invariants.js';
import { PgBouncer, pgbouncerUnavailable } from './support/pgbouncer.js';
import { ownClusterUnavailable, PostgresCluster } from './support/postgres-cluster.js';
import { PartnerEndpoint, waitFor } from './support/probes.js';
import { everyLoadBackAfter, firstSuccessAfter, InvoiceLoad, ListingLoad, type Requests } from './support/read-load.js';

/** The service's DATABASE_REQUEST_TIMEOUT_MS here: while no server accepts writes, 503s come this fast. */
const DEADLINE_MS = 1000;
/** How long the old primary is dead before the standby is promoted, as a failover manager takes to decide. */
const DETECTION_MS = 3000;
/** Reads and callbacks answered success again this long after the promotion at the latest. */
const BACK_WITHIN_MS = 10_000;
/** What the service listens to, each on a connection of its own: cache invalidations, new payment requests. */
const LISTENED = ['listen "partner_integrations_changed"', 'listen "payment_request_due"'];
/** Keys presented in turn by each reader, more than it sends in the credential cache's lifetime. */
const READ_KEYS = 6;

/** How the service reaches the servers: its DATABASE_URL and DATABASE_DIRECT_URL, and what follows the promotion. */
interface Route {
  name: string;
  unavailable: string | null;
  open(
    primary: PostgresCluster,
    standby: PostgresCluster,
  ): Promise<{ env: Record<string, string>; promoted(): void; close(): Promise<void> }>;
}

/** Both hosts, the primary first, as an operator names them; read-write is the default for several. */
const bothHosts = (primary: PostgresCluster, standby: PostgresCluster) =>
  `postgres://postgres@127.0.0.1:${primary.port},127.0.0.1:${standby.port}/postgres`;

const ROUTES: Route[] = [
  {
    name: 'DATABASE_URL naming both servers',
    unavailable: null,
    async open(primary, standby) {
      return { env: { DATABASE_URL: bothHosts(primary, standby) }, promoted() {}, async close() {} };
    },
  },
  {
    name: 'through PgBouncer in transaction mode',
    unavailable: pgbouncerUnavailable,
    async open(primary, standby) {
      const bouncer = await PgBouncer.start(primary.port);
      return {
        env: { DATABASE_URL: bouncer.url('postgres'), DATABASE_DIRECT_URL: bothHosts(primary, standby) },
        promoted: () => bouncer.repoint(standby.port),
        close: () => bouncer.stop(),
      };
    },
  },
];

describe.skipIf(ownClusterUnavailable).each(ROUTES)(
  'the primary lost, its synchronous standby promoted: $name',
  (route) => {
    let primary: PostgresCluster;
    let standby: PostgresCluster;
    let databases: Awaited<ReturnType<Route['open']>> | undefined;
    let service: ServiceProcess | undefined;
    let running: { start(): void; stop(): Promise<void> }[] = [];
    const partnerEndpoint = new PartnerEndpoint();

    beforeAll(async () => {
      if (route.unavailable) return;
      await partnerEndpoint.start();
      primary = await PostgresCluster.create();
      standby = await primary.createStandby();
    });
    afterAll(async () => {
      // A load that failed has failed the test already: what it started is stopped all the same.
      await Promise.allSettled(running.map((load) => load.stop()));
      if (service && service.child.exitCode !== null) {
        console.log(`[faults] the service exited (${service.child.exitCode}):\n${service.output().slice(-4000)}`);
      }
      await service?.stop('SIGKILL');
      await partnerEndpoint.stop();
      await databases?.close();
      standby?.destroy();
      primary?.destroy();
    });

    it.skipIf(route.unavailable)(
      'the service follows without a restart: nothing lost or doubled, back within seconds',
      async () => {
        databases = await route.open(primary, standby);
        service = await startServiceProcess(
          testEnv(
            { databaseUrl: databases.env.DATABASE_URL },
            { ...databases.env, DATABASE_REQUEST_TIMEOUT_MS: String(DEADLINE_MS), PAYMENT_RETRY_BASE_SECONDS: '0.5' },
          ),
        );
        const urls = service.urls;
        const partner = await createPartner(urls.admin, 20, partnerEndpoint.url);
        // Payment requests stay in flight a while: some are under way when the primary dies.
        partnerEndpoint.firstDelayMs = 500;
        const readers = await Promise.all(Array.from({ length: READ_KEYS }, () => createPartner(urls.admin, 0)));
        const reads = new ListingLoad(
          fetch,
          readers.map((reader) => ({
            url: `${urls.integrations}/api/v1/countries/?limit=5`,
            authorization: `Api-Key ${reader.ssoSecret}`,
          })),
          3,
        );
        const invoices = new InvoiceLoad(fetch, urls.admin, partner.tenantId, 2);
        const callbacks = new CallbackLoad(`${urls.integrations}/api/v1/payments/notify/`, partner, {
          rate: 20,
          concurrency: 4,
          timeoutMs: 15_000,
        });
        const loads: Requests[] = [
          { name: 'reads', requests: reads.tally.requests },
          { name: 'invoices', requests: invoices.tally.requests },
          { name: 'callbacks', requests: callbacks.requests },
        ];
        running = [reads, invoices, callbacks];
        for (const load of running) load.start();
        await waitFor('steady traffic', () => loads.every((load) => firstSuccessAfter(load, 0)), 30_000);

        primary.kill();
        await new Promise((resolve) => setTimeout(resolve, DETECTION_MS));
        standby.promote();
        databases.promoted();
        const promotedAt = Date.now();
        const backAt = await waitFor(
          'reads, invoices and callbacks answered success again',
          () => everyLoadBackAfter(loads, promotedAt),
          BACK_WITHIN_MS + 20_000,
        );
        await new Promise((resolve) => setTimeout(resolve, 2000));
        await Promise.all(running.map((load) => load.stop()));
        running = [];
        await callbacks.settle();
        const alive = service.child.exitCode === null;
        await partnerEndpoint.receivedAll(invoices.invoiceIds, 60_000);
        // The cache invalidations' and the payment worker's channels listened to again, on the new primary.
        const listening = await withDatabase({ databaseUrl: standby.url() }, (query) =>
          query<{ query: string }>("select query from pg_stat_activity where query ilike 'listen %' order by query"),
        );
        expect(await service.stop('SIGTERM')).toBe(0);
        service = undefined;

        const newPrimary = { databaseUrl: standby.url() };
        const report = await withDatabase(newPrimary, (query) => checkInvariants(query, partner, callbacks));
        const stored = await withDatabase(newPrimary, (query) =>
          query<{ id: string }>('select id from invoices where id = any($1)', [invoices.invoiceIds]),
        );
        const lostInvoices = invoices.invoiceIds.filter((id) => !stored.some((row) => row.id === id));
        const requestIds = (id: string) =>
          new Set(
            partnerEndpoint.received.filter((request) => request.invoiceId === id).map((request) => request.webhookId),
          );
        const doubledRequests = invoices.invoiceIds.filter((id) => requestIds(id).size > 1);
        const lostCallbacks = report.violations.filter((violation) =>
          /answered success but stored 0 times/.test(violation),
        );
        const doubledCallbacks = report.violations.filter((violation) => /stored [2-9]\d* times/.test(violation));
        const all = loads.flatMap((load) => load.requests);
        const byOutcome = new Map<string, number>();
        for (const request of all)
          byOutcome.set(String(request.outcome), (byOutcome.get(String(request.outcome)) ?? 0) + 1);
        const outcomes = [...byOutcome].sort().map(([outcome, count]) => `${outcome} ${count}`);
        console.log(
          `[faults] failover ${route.name}: sent ${all.length} (${outcomes.join(', ')}), ` +
            `lost ${lostCallbacks.length + lostInvoices.length}, doubled ${doubledCallbacks.length + doubledRequests.length}, ` +
            `process alive ${alive}, back ${((backAt - promotedAt) / 1000).toFixed(1)} s after the promotion`,
        );
        expect(alive).toBe(true);
        expect(listening.map((row) => row.query)).toEqual(LISTENED);
        expect(report.violations).toEqual([]);
        expect(lostInvoices).toEqual([]);
        expect(doubledRequests).toEqual([]);
        expect([...byOutcome.keys()].filter((outcome) => !/^(2..|503)$/.test(outcome))).toEqual([]);
        expect(backAt - promotedAt).toBeLessThan(BACK_WITHIN_MS);
      },
    );
  },
);
