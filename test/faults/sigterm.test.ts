// SIGTERM under a callback load: requests in flight finish, new ones are refused (503 while
// closing, then no listener), and the process exits 0 within the shutdown timeout. The
// notifications not answered 200 are sent again to the next run: none is lost or doubled.
import { afterAll, describe, expect, it } from 'vitest';
import { REQUEST_TIMEOUT_MS } from '../../src/payments/delivery/send.js';
import { testEnv } from '../support/env.js';
import { type ServiceProcess, startServiceProcess } from '../support/process.js';
import { CallbackLoad, createPartner } from './support/callback-load.js';
import { DATABASE_KINDS, type ScenarioDatabase, scenarioDatabase } from './support/databases.js';
import { checkInvariants, summary, withDatabase } from './support/invariants.js';
import { waitFor } from './support/probes.js';

const CALLBACK = '/api/v1/payments/notify/';
/** What close() allows itself: in-flight requests, then payment requests up to their own timeout. */
const SHUTDOWN_TIMEOUT_MS = REQUEST_TIMEOUT_MS + 5000;

describe.each(DATABASE_KINDS)('SIGTERM under callback load on %s', (kind) => {
  let database: ScenarioDatabase;
  let service: ServiceProcess | undefined;
  afterAll(async () => {
    await service?.stop('SIGKILL');
    await database?.drop();
  });

  it('finishes what is in flight, refuses the rest, and exits in time', async () => {
    database = await scenarioDatabase(kind);
    const env = testEnv(database.target);
    service = await startServiceProcess(env);
    const partner = await createPartner(service.urls.admin, 30);
    const load = new CallbackLoad(`${service.urls.integrations}${CALLBACK}`, partner, { rate: 80, concurrency: 16 });
    load.start();
    await waitFor('a steady load', () => load.count(200) >= 60);
    const signalledAt = Date.now();
    const exit = service.stop('SIGTERM');
    const code = await exit;
    const exitMs = Date.now() - signalledAt;
    const inFlight = load.requests.filter((request) => request.started < signalledAt && request.ended > signalledAt);
    await load.stop();

    service = await startServiceProcess(env);
    load.retarget(`${service.urls.integrations}${CALLBACK}`);
    await load.settle();
    expect(await service.stop('SIGTERM')).toBe(0);
    const report = await withDatabase(database.target, (query) => checkInvariants(query, partner, load));
    const inFlightOutcomes = inFlight.map((request) => request.outcome).join(',');
    console.log(
      summary(
        `SIGTERM on ${kind}`,
        load,
        report,
        `exit ${code} after ${exitMs} ms, in flight at the signal: ${inFlight.length} (${inFlightOutcomes})`,
      ),
    );
    expect(code).toBe(0);
    expect(exitMs).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
    expect(report.violations).toEqual([]);
    expect(load.count('timeout')).toBe(0);
  });
});
