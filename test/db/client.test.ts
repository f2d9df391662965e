// The database handle (src/db/client.ts): work PostgreSQL rolls back for a conflict between two
// requests (a deadlock, a serialization failure) is sent again, so that neither caller sees an error.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statement } from '../../src/db/statements.js';
import { useTestContext } from '../support/apps.js';

const test = useTestContext();

const TABLE = 'conflict_probe';
const LOCK_ROW = statement<[id: number], { id: number }>(`select id from ${TABLE} where id = $1 for update`);
/** Locks both rows in the order given, in one statement, waiting long enough for the other side to lock its first. */
const LOCK_BOTH = statement<[first: number, second: number], never>(
  `with first as (select id from ${TABLE} where id = $1 for update),
        pause as (select pg_sleep(0.2) from first)
   select id from ${TABLE}, pause where id = $2 for update`,
);

/** Resolves once `parties` callers have arrived. */
function barrier(parties: number): () => Promise<void> {
  let arrived = 0;
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return () => {
    if (++arrived === parties) open();
    return opened;
  };
}

describe('conflicts', () => {
  beforeAll(async () => {
    await test.context.database.executeSql(
      `create table ${TABLE} (id int primary key); insert into ${TABLE} values (1), (2)`,
    );
  });
  afterAll(async () => {
    await test.context.database.executeSql(`drop table ${TABLE}`);
  });

  it('sends a transaction again whole after a deadlock, so that both succeed', async () => {
    const { database } = test.context;
    const bothHoldOne = barrier(2);
    const tries = [0, 0];
    // Each locks one row, waits until the other holds the other row, then asks for it: a deadlock,
    // whose victim PostgreSQL rolls back.
    const lockInOrder = (side: number, first: number, second: number) =>
      database.transact(async (run) => {
        tries[side]++;
        await run(LOCK_ROW, [first]);
        await bothHoldOne();
        await run(LOCK_ROW, [second]);
        return side;
      });

    expect(await Promise.all([lockInOrder(0, 1, 2), lockInOrder(1, 2, 1)])).toEqual([0, 1]);
    expect(tries.sort()).toEqual([1, 2]);
  });

  it('sends a statement on its own again after a deadlock', async () => {
    const { database } = test.context;
    const answers = await Promise.all([database.run(LOCK_BOTH, [1, 2]), database.run(LOCK_BOTH, [2, 1])]);
    expect(answers.map((rows) => rows.length)).toEqual([1, 1]);
  });
});
