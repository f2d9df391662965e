// DatabaseHandle.lane (src/db/client.ts): the hottest statements on connections of their own, so
// that they keep to the same warm backends whatever the pool has opened.
import { describe, expect, it } from 'vitest';
import { useTestContext } from '../support/apps.js';

const test = useTestContext();

const backendOf = async (query: (text: string, values: unknown[]) => Promise<{ pid: number }[]>) =>
  (await query('select pg_backend_pid() as pid', []))[0].pid;

describe('a lane', () => {
  it('keeps to its own connections once the pool has opened all of its', async () => {
    const { database } = test.context;
    const pool = database.poolStatistics().size;
    const lane = database.lane(2);
    // Every pool connection busy at once, so that each is open.
    const poolBackends = await Promise.all(
      Array.from({ length: pool }, async () => {
        const { rows } = await database.executeSql('select pg_backend_pid() as pid, pg_sleep(0.05)');
        return rows[0].pid as number;
      }),
    );

    const laneBackends = new Set<number>();
    for (let query = 0; query < 20; query++)
      laneBackends.add(await backendOf((text, values) => lane.query(text, values)));

    expect(new Set(poolBackends).size).toBe(pool);
    expect(lane.size).toBe(2);
    expect(laneBackends.size).toBeLessThanOrEqual(2);
    for (const backend of laneBackends) expect(poolBackends).not.toContain(backend);
  });
});
