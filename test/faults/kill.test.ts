// The service killed with SIGKILL in the middle of a callback load, then started again at once,
// round after round: every notification answered `success` survives, nothing is stored twice, and
// on the embedded server the directory opens again each time: the killed service's server shuts
// down with it and lets go of the directory's lock.
import { afterAll, describe, expect, it } from 'vitest';
import { testEnv } from '../support/env.js';
import { type ServiceProcess, startServiceProcess } from '../support/process.js';
import { CallbackLoad, createPartner } from './support/callback-load.js';
import { DATABASE_KINDS, type ScenarioDatabase, scenarioDatabase } from './support/databases.js';
import { checkInvariants, summary, withDatabase } from './support/invariants.js';
import { waitFor } from './support/probes.js';

const CALLBACK = '/api/v1/payments/notify/';
const ROUNDS: Record<string, number> = { PostgreSQL: 2, 'embedded server': 5 };
const STORED_PER_ROUND = 25;

describe.each(DATABASE_KINDS)('SIGKILL under callback load on %s', (kind) => {
  let database: ScenarioDatabase;
  let service: ServiceProcess | undefined;
  afterAll(async () => {
    await service?.stop('SIGKILL');
    await database?.drop();
  });

  it(`keeps every 200 through ${ROUNDS[kind]} kills and restarts`, async () => {
    database = await scenarioDatabase(kind);
    const env = testEnv(database.target);
    service = await startServiceProcess(env);
    const partner = await createPartner(service.urls.admin, 30);
    const load = new CallbackLoad(`${service.urls.integrations}${CALLBACK}`, partner, { rate: 50, timeoutMs: 10_000 });
    load.start();
    const restartsMs: number[] = [];
    for (let round = 0; round < ROUNDS[kind]; round++) {
      const before = load.count(200);
      await waitFor('callbacks stored in this round', () => load.count(200) >= before + STORED_PER_ROUND);
      await service.stop('SIGKILL');
      const started = Date.now();
      service = await startServiceProcess(env);
      restartsMs.push(Date.now() - started);
      load.retarget(`${service.urls.integrations}${CALLBACK}`);
    }
    await waitFor('callbacks stored after the last restart', () => load.count(200) >= STORED_PER_ROUND);
    await load.stop();
    await load.settle();
    expect(await service.stop('SIGTERM')).toBe(0);

    const report = await withDatabase(database.target, (query) => checkInvariants(query, partner, load));
    console.log(
      summary(`SIGKILL ×${ROUNDS[kind]} on ${kind}`, load, report, `restarts took ${restartsMs.join(', ')} ms`),
    );
    expect(report.violations).toEqual([]);
    expect(load.notifications.every((notification) => notification.accepted !== null)).toBe(true);
    expect(load.count('timeout')).toBe(0);
  });
});
