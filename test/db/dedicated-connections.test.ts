// DatabaseHandle.dedicatedConnections (src/db/client.ts): the hottest statements on connections of
// their own, so that they keep to the same warm backends whatever the pool has opened.
import { describe, expect, it } from 'vitest';
import { statement } from '../../src/db/statements.js';
import { useTestContext } from '../support/apps.js';

const test = useTestContext();

const BACKEND = statement<[], { pid: number }>('select pg_backend_pid() as pid');

describe('dedicated connections', () => {
  it('keep to themselves once the pool has opened all of its', async () => {
    const { database } = test.context;
    const pool = database.poolStatistics().size;
    const dedicated = database.dedicatedConnections(2);
    // Every pool connection busy at once, so that each is open.
    const poolBackends = await Promise.all(
      Array.from({ length: pool }, async () => {
        const { rows } = await database.executeSql('select pg_backend_pid() as pid, pg_sleep(0.05)');
        return rows[0].pid as number;
      }),
    );

    const dedicatedBackends = new Set<number>();
    for (let query = 0; query < 20; query++) dedicatedBackends.add((await dedicated.run(BACKEND, []))[0].pid);

    expect(new Set(poolBackends).size).toBe(pool);
    expect(dedicated.size).toBe(2);
    expect(dedicatedBackends.size).toBeLessThanOrEqual(2);
    for (const backend of dedicatedBackends) expect(poolBackends).not.toContain(backend);
  });
});
