// Behind PgBouncer in transaction pooling mode (issue 38), Debian's 1.18, which keeps no named
// prepared statement: each transaction of a client may run on another server connection. Without
// DATABASE_DIRECT_URL the service refuses to start, saying what to set. With it, a first start
// migrates an empty database, partners read with credentials the service has not cached, callbacks
// are stored once, invoices' payment requests reach the partner, a NOTIFY sent through the pooler
// reaches the listening connection (on the direct URL), a backup and its restore go through the
// pooler, and the prune's advisory lock keeps two instances' prunes apart.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { type DatabaseHandle, openDatabase } from '../../src/db/client.js';
import { PRUNE_LOCK_KEY, prune, retentionRules } from '../../src/maintenance/retention.js';
import { migrationsDir } from '../../src/paths.js';
import { TEST_ADMIN_TOKEN, testEnv } from '../support/env.js';
import { partnerctl, type ServiceProcess, startServiceProcess } from '../support/process.js';
import { CallbackLoad, createPartner } from './support/callback-load.js';
import { DATABASE_KINDS, type ScenarioDatabase, scenarioDatabase } from './support/databases.js';
import { checkInvariants, withDatabase } from './support/invariants.js';
import { PgBouncer, pgbouncerUnavailable } from './support/pgbouncer.js';
import { PartnerEndpoint, waitFor } from './support/probes.js';
import { InvoiceLoad, ListingLoad } from './support/read-load.js';

const unavailable = pgbouncerUnavailable ?? (DATABASE_KINDS.includes('PostgreSQL') ? null : 'no PostgreSQL cluster');
/** The name the service's direct connections give PostgreSQL, to tell them from PgBouncer's. */
const DIRECT_APPLICATION = 'partner-integrations-direct';
/** What the service listens to: cache invalidations, new payment requests. */
const LISTENED = ['listen "partner_integrations_changed"', 'listen "payment_request_due"'];
/** Partners reading, each with a key of its own: every first read checks an uncached credential. */
const READERS = 6;
/** How long the mixed traffic runs. */
const TRAFFIC_MS = 4000;

describe.skipIf(unavailable)('behind PgBouncer in transaction pooling mode', () => {
  let database: ScenarioDatabase;
  let bouncer: PgBouncer;
  let pooledUrl: string;
  let directUrl: string;
  let service: ServiceProcess | undefined;
  const partnerEndpoint = new PartnerEndpoint();

  beforeAll(async () => {
    // Empty, as a first start finds it: the migrations run through the service's direct connection.
    database = await scenarioDatabase('PostgreSQL', { empty: true });
    const server = new URL(database.target.databaseUrl!);
    bouncer = await PgBouncer.start(Number(server.port));
    pooledUrl = bouncer.url(server.pathname.slice(1));
    directUrl = `${server}?application_name=${DIRECT_APPLICATION}`;
    await partnerEndpoint.start();
  });
  afterAll(async () => {
    if (service && service.child.exitCode !== null) {
      console.log(`[faults] the service exited (${service.child.exitCode}):\n${service.output().slice(-4000)}`);
    }
    await service?.stop('SIGKILL');
    await partnerEndpoint.stop();
    await bouncer?.stop();
    await database?.drop();
  });

  it('refuses to start without DATABASE_DIRECT_URL, naming it, and changes nothing', async () => {
    const { code, stdout, stderr } = await partnerctl(['serve'], testEnv({ databaseUrl: pooledUrl }));
    expect(code).not.toBe(0);
    expect(`${stdout}${stderr}`).toMatch(/connection pooler.*set DATABASE_DIRECT_URL/);
    const [migrated] = await withDatabase(database.target, (query) =>
      query<{ migrated: boolean }>("select to_regclass('drizzle.__drizzle_migrations') is not null as migrated"),
    );
    expect(migrated!.migrated).toBe(false);
  });

  it('with DATABASE_DIRECT_URL: migrates at start, serves reads, callbacks and payment requests', async () => {
    service = await startServiceProcess(
      testEnv({ databaseUrl: pooledUrl }, { DATABASE_DIRECT_URL: directUrl, PAYMENT_RETRY_BASE_SECONDS: '0.5' }),
    );
    const journal = JSON.parse(readFileSync(path.join(migrationsDir, 'meta/_journal.json'), 'utf8'));
    const [applied] = await withDatabase(database.target, (query) =>
      query<{ count: number }>('select count(*)::int as count from drizzle.__drizzle_migrations'),
    );
    expect(applied!.count).toBe(journal.entries.length);
    const listening = await withDatabase(database.target, (query) =>
      query<{ application_name: string; query: string }>(
        "select application_name, query from pg_stat_activity where query ilike 'listen %' order by query",
      ),
    );
    expect(listening).toEqual(LISTENED.map((query) => ({ application_name: DIRECT_APPLICATION, query })));

    const urls = service.urls;
    const partner = await createPartner(urls.admin, 20, partnerEndpoint.url);
    const readers = await Promise.all(Array.from({ length: READERS }, () => createPartner(urls.admin, 0)));
    const reads = new ListingLoad(
      fetch,
      readers.map((reader) => ({
        url: `${urls.integrations}/api/v1/countries/?limit=5`,
        authorization: `Api-Key ${reader.ssoSecret}`,
      })),
      10,
    );
    const invoices = new InvoiceLoad(fetch, urls.admin, partner.tenantId, 2);
    const callbacks = new CallbackLoad(`${urls.integrations}/api/v1/payments/notify/`, partner, {
      rate: 20,
      concurrency: 4,
      timeoutMs: 15_000,
    });
    const loads = [reads, invoices, callbacks];
    for (const load of loads) load.start();
    await new Promise((resolve) => setTimeout(resolve, TRAFFIC_MS));
    await Promise.all(loads.map((load) => load.stop()));
    await callbacks.settle();
    await partnerEndpoint.receivedAll(invoices.invoiceIds, 30_000);
    expect(service.child.exitCode).toBe(null);
    expect(await service.stop('SIGTERM')).toBe(0);
    service = undefined;

    const report = await withDatabase(database.target, (query) => checkInvariants(query, partner, callbacks));
    const outcomes = [...reads.tally.requests, ...invoices.tally.requests, ...callbacks.requests].map((request) =>
      String(request.outcome),
    );
    console.log(
      `[faults] behind PgBouncer: ${reads.tally.requests.length} reads, ${invoices.invoiceIds.length} invoices ` +
        `delivered, ${callbacks.requests.length} callbacks; outcomes ${[...new Set(outcomes)].sort().join(', ')}`,
    );
    expect(outcomes.filter((outcome) => !/^2..$/.test(outcome))).toEqual([]);
    expect(reads.tally.requests.length).toBeGreaterThan(READERS);
    expect(invoices.invoiceIds.length).toBeGreaterThan(0);
    expect(callbacks.requests.length).toBeGreaterThan(0);
    expect(report.violations).toEqual([]);
  });

  it('takes a backup through the pooler, and restores it through the pooler into an empty database', async () => {
    service = await startServiceProcess(testEnv({ databaseUrl: pooledUrl }, { DATABASE_DIRECT_URL: directUrl }));
    const directory = mkdtempSync(path.join(tmpdir(), 'pi-faults-pgbouncer-backup-'));
    const copy = await scenarioDatabase('PostgreSQL', { empty: true });
    try {
      const file = path.join(directory, 'behind-pgbouncer.pib');
      const backup = await partnerctl(['backup', file, '--json'], {
        ADMIN_URL: service.urls.admin,
        ADMIN_TOKEN: TEST_ADMIN_TOKEN,
      });
      expect(backup.code, backup.stderr).toBe(0);
      expect(await service.stop('SIGTERM')).toBe(0);
      service = undefined;

      const copyServer = new URL(copy.target.databaseUrl!);
      const restore = await partnerctl(
        ['restore', file, '--json'],
        testEnv(
          { databaseUrl: bouncer.url(copyServer.pathname.slice(1)) },
          { DATABASE_DIRECT_URL: `${copyServer}?application_name=${DIRECT_APPLICATION}` },
        ),
      );
      expect(restore.code, restore.stderr).toBe(0);
      const restored = JSON.parse(restore.stdout) as { rows: Record<string, number> };
      // Every row of the source (the previous test's traffic) is in the copy, as the backup counted them.
      const countsOf = (target: ScenarioDatabase['target']) =>
        withDatabase(target, async (query) => {
          const counts: Record<string, number> = {};
          for (const table of Object.keys(restored.rows)) {
            const [row] = await query<{ count: number }>(`select count(*)::int as count from ${table}`);
            counts[table] = row!.count;
          }
          return counts;
        });
      const source = await countsOf(database.target);
      const copied = await countsOf(copy.target);
      expect(copied).toEqual(restored.rows);
      // The backup's own audit event is written once it has been taken.
      expect(copied).toEqual({ ...source, 'public.audit_events': source['public.audit_events'] - 1 });
      expect(copied['public.invoices']).toBeGreaterThan(0);
    } finally {
      await copy.drop();
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('hears a NOTIFY sent through the pooler on its listening connection to the direct URL', async () => {
    const handle = await openDatabase(
      loadConfig(testEnv({ databaseUrl: pooledUrl }, { DATABASE_DIRECT_URL: directUrl })),
    );
    try {
      const heard: string[] = [];
      await handle.listen(
        'pgbouncer_test',
        (payload) => heard.push(payload),
        () => {},
      );
      await handle.executeSql("select pg_notify('pgbouncer_test', 'through the pooler')");
      await waitFor('the notification', () => heard.length > 0, 10_000);
      expect(heard).toEqual(['through the pooler']);
    } finally {
      await handle.close();
    }
  });

  it("keeps two instances' prunes apart with the advisory lock on the direct connection", async () => {
    const config = loadConfig(testEnv({ databaseUrl: pooledUrl }, { DATABASE_DIRECT_URL: directUrl }));
    const instances: DatabaseHandle[] = [await openDatabase(config), await openDatabase(config)];
    try {
      const [first, second] = instances as [DatabaseHandle, DatabaseHandle];
      const rules = retentionRules(config.retention);
      let secondDone = false;
      let pruning: Promise<Record<string, number>> | undefined;
      await first.withAdvisoryLock(PRUNE_LOCK_KEY, async () => {
        pruning = prune(second, rules).finally(() => (secondDone = true));
        // The second instance's prune waits on the lock, in a session of the direct URL.
        await waitFor('the second prune to wait for the lock', () =>
          withDatabase(
            database.target,
            async (query) =>
              (
                await query(
                  `select 1 from pg_locks join pg_stat_activity using (pid)
                 where locktype = 'advisory' and objid = $1 and not granted and application_name = $2`,
                  [PRUNE_LOCK_KEY, DIRECT_APPLICATION],
                )
              ).length === 1,
          ),
        );
        expect(secondDone).toBe(false);
      });
      const pruned = await pruning!;
      expect(Object.keys(pruned).sort()).toEqual([...new Set(rules.map((rule) => rule.name ?? rule.table))].sort());
    } finally {
      await Promise.all(instances.map((instance) => instance.close()));
    }
  });
});
