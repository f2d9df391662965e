// Redis stopped (SIGSTOP: connected, never answering) under a steady callback load, with the rate
// limits' counters in it: every request is still answered within a bound (the limits count in the
// process meanwhile), /readyz stays 200 and says the limits are local, and nothing is lost or
// stored twice. A Redis server of the scenario's own, never the shared one.
import { afterAll, describe, expect, inject, it } from 'vitest';
import { testEnv } from '../support/env.js';
import { type ServiceProcess, startServiceProcess } from '../support/process.js';
import { type PrivateRedis, startPrivateRedis } from '../support/redis.js';
import { CallbackLoad, createPartner } from './support/callback-load.js';
import { type ScenarioDatabase, scenarioDatabase } from './support/databases.js';
import { checkInvariants, summary, withDatabase } from './support/invariants.js';
import { Prober, waitFor } from './support/probes.js';

const CALLBACK = '/api/v1/payments/notify/';
/** What "answers quickly" means while Redis hangs: its command timeout and some. */
const BOUND_MS = 2000;
const STOPPED_MS = 8000;

describe.skipIf(!inject('postgresTemplateUrl'))('Redis stopped under callback load', () => {
  let database: ScenarioDatabase;
  let redis: PrivateRedis | undefined;
  let service: ServiceProcess | undefined;
  afterAll(async () => {
    await service?.stop('SIGKILL');
    await redis?.stop();
    await database?.drop();
  });

  it('answers every request within the bound, keeps /readyz 200, loses and doubles nothing', async () => {
    database = await scenarioDatabase('PostgreSQL');
    redis = await startPrivateRedis();
    const { databaseUrl } = database.target as { databaseUrl: string };
    service = await startServiceProcess(
      testEnv(
        { databaseUrl },
        {
          REDIS_URL: redis.url,
          REDIS_KEY_PREFIX: 'faults-redis-stopped',
          // On, as in production (the test environment turns them off), so that every request counts in Redis.
          RATE_LIMIT_PER_MINUTE: '100000',
          AUTH_FAILURE_LIMIT_PER_MINUTE: '30',
        },
      ),
    );
    const { integrations, admin } = service.urls;
    const partner = await createPartner(admin, 30);
    const load = new CallbackLoad(`${integrations}${CALLBACK}`, partner, { rate: 50, timeoutMs: 10_000 });
    const readiness = new Prober(() => `${integrations}/readyz`, 200, 10_000);
    load.start();
    await waitFor('a steady load', () => load.count(200) >= 100);

    const stoppedAt = Date.now();
    const answeredBefore = load.count(200);
    redis.pause();
    await waitFor('callbacks answered while Redis is stopped', () => load.count(200) >= answeredBefore + 100);
    const degraded = await (await fetch(`${integrations}/readyz`)).json();
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, STOPPED_MS - (Date.now() - stoppedAt))));
    const sentWhileStopped = load.requests.filter((request) => request.started >= stoppedAt).length;
    redis.resume();
    const resumedAt = Date.now();
    await waitFor('callbacks after Redis resumed', () =>
      load.requests.some((request) => request.started > resumedAt + 1000),
    );
    await load.stop();
    const probes = await readiness.stop();
    await load.settle();
    expect(await service.stop('SIGTERM')).toBe(0);

    const report = await withDatabase({ databaseUrl }, (query) => checkInvariants(query, partner, load));
    const [stored] = await withDatabase({ databaseUrl }, (query) =>
      query('select count(*)::int as events from payment_events where tenant_id = $1', [partner.tenantId]),
    );
    const answered = load.requests.filter((request) => typeof request.outcome === 'number').length;
    const lost = report.violations.filter((violation) => violation.includes('stored 0 times')).length;
    const doubled = report.violations.filter((violation) => / stored [2-9]\d* times/.test(violation)).length;
    const stopped = probes.filter((probe) => probe.at >= stoppedAt && probe.at < resumedAt);
    console.log(
      summary(
        'Redis stopped',
        load,
        report,
        `Redis stopped ${resumedAt - stoppedAt} ms (${sentWhileStopped} requests sent meanwhile); ` +
          `requests sent ${load.sent}, answered ${answered}, stored ${stored.events}, lost ${lost}, doubled ${doubled}; ` +
          `/readyz slowest ${Math.max(...stopped.map((probe) => probe.ms))} ms while stopped`,
      ),
    );
    expect(report.violations).toEqual([]);
    expect(degraded).toEqual({ status: 'ok', rate_limits: expect.stringContaining('Redis is not answering') });
    expect(stopped.every((probe) => probe.status === 200)).toBe(true);
    expect([...load.answered.keys()]).toEqual(['200']);
    expect(answered).toBe(load.sent);
    expect(load.slowestMs).toBeLessThan(BOUND_MS);
    expect(stored.events).toBe(load.notifications.length);
  });
});
