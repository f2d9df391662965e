// Group commit with a request deadline: a call that waits behind a group under way is answered
// within its own deadline, as the database unavailable, and is never sent afterwards. Grouped
// transactions: calls that arrive together share one transaction, and none takes effect once its
// caller has been answered at its deadline. A call answered at its deadline is not sent again
// when its group fails for another's sake.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatabaseUnavailableError, isUniqueViolation } from '../../src/db/errors.js';
import { answerEach, GroupCommit, GroupedTransactions, type Waiting } from '../../src/db/group-commit.js';
import { statement } from '../../src/db/statements.js';
import { useTestContext } from '../support/apps.js';

const test = useTestContext();

describe('GroupCommit with a deadline', () => {
  it('fails a call queued behind a group that never ends at its deadline, and never sends it', async () => {
    const sent: string[][] = [];
    // A statement the database never answers: its group stays under way.
    const commit = new GroupCommit(
      1,
      10,
      (group: Waiting<string, string>[]) => {
        sent.push(group.map((each) => each.call));
        return new Promise<void>(() => {});
      },
      50,
    );
    const first = commit.add('first');
    await new Promise((resolve) => setImmediate(resolve));
    const second = commit.add('second');
    // Both awaited together: the first fails first, and must have its handler by then.
    await Promise.all([
      expect(first).rejects.toBeInstanceOf(DatabaseUnavailableError),
      expect(second).rejects.toBeInstanceOf(DatabaseUnavailableError),
    ]);
    expect(sent).toEqual([['first']]);
  });

  it('answers calls that the database answers in time as before', async () => {
    const commit = new GroupCommit(
      1,
      10,
      async (group: Waiting<number, number>[]) => {
        for (const each of group) each.resolve(each.call * 2);
      },
      50,
    );
    expect(await Promise.all([commit.add(1), commit.add(2)])).toEqual([2, 4]);
  });
});

describe('answerEach', () => {
  /** A call that remembers how it was answered. */
  const call = (name: string, expired = false) => {
    const answered: { value?: string; error?: unknown } = {};
    const waiting: Waiting<string, string> = {
      call: name,
      resolve: (value) => {
        answered.value = value;
      },
      reject: (error) => {
        answered.error = error;
      },
      expired,
    };
    return { waiting, answered };
  };

  it('never sends a call answered at its deadline, first or again after its group failed', async () => {
    const sent: string[][] = [];
    const [late, meanwhile, onTime] = [call('late', true), call('meanwhile'), call('on time')];
    await answerEach([late.waiting, meanwhile.waiting, onTime.waiting], async (group) => {
      sent.push(group.map((each) => each.call));
      if (group.length > 1) {
        // Answered at its deadline while its group was under way, which then fails for one call.
        meanwhile.waiting.expired = true;
        throw new Error('a value the database refuses');
      }
      return group.map((each) => `${each.call}: done`);
    });
    expect(sent).toEqual([['meanwhile', 'on time'], ['on time']]);
    expect(onTime.answered).toEqual({ value: 'on time: done' });
    expect([late.answered, meanwhile.answered]).toEqual([{}, {}]);
  });
});

const TABLE = 'grouped_transaction_probe';
/** Stores `$1`, once the probe's row 0 is free of other transactions' locks; answers with its transaction's id. */
const STORE = statement<[id: number], { id: number; transaction: string }>(
  `with free as (select id from ${TABLE} where id = 0 for share)
   insert into ${TABLE} (id) select $1 from free returning id, txid_current()::text as transaction`,
);
const LOCK_FIRST_ROW = statement<[], { id: number }>(`select id from ${TABLE} where id = 0 for update`);

describe('GroupedTransactions', () => {
  beforeAll(async () => {
    await test.context.database.executeSql(
      `create table ${TABLE} (id int primary key); insert into ${TABLE} values (0)`,
    );
  });
  afterAll(async () => {
    await test.context.database.executeSql(`drop table ${TABLE}`);
  });
  const stored = async () =>
    (
      await test.context.database.executeSql<{ id: number }>(`select id from ${TABLE} where id > 0 order by id`)
    ).rows.map((row) => row.id);

  it('runs the calls that arrive together in one transaction, each answered with its own rows', async () => {
    const grouped = new GroupedTransactions(test.context.database, STORE);
    const answers = await Promise.all([grouped.run([1]), grouped.run([2]), grouped.run([3])]);
    expect(answers.map(([row]) => row.id)).toEqual([1, 2, 3]);
    expect(new Set(answers.map(([row]) => row.transaction)).size).toBe(1);
    expect(await stored()).toEqual([1, 2, 3]);
  });

  it('sends each call again alone when one fails the transaction: only that one fails', async () => {
    const grouped = new GroupedTransactions(test.context.database, STORE);
    const [first, repeated, other] = await Promise.allSettled([grouped.run([4]), grouped.run([4]), grouped.run([5])]);
    expect(first.status).toBe('fulfilled');
    expect(other.status).toBe('fulfilled');
    expect(repeated.status === 'rejected' && isUniqueViolation(repeated.reason)).toBe(true);
    expect(await stored()).toEqual([1, 2, 3, 4, 5]);
  });

  it('rolls back a group under way when one of its callers is answered at the deadline', async () => {
    const { database } = test.context;
    const grouped = new GroupedTransactions({ transact: database.transact, deadlineMs: 200 }, STORE);
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let locked!: () => void;
    const lockTaken = new Promise<void>((resolve) => {
      locked = resolve;
    });
    // Another transaction holds row 0: the group's statement waits for it past the deadline.
    const holder = database.transact(async (run) => {
      await run(LOCK_FIRST_ROW, []);
      locked();
      await released;
    });
    await lockTaken;
    const late = grouped.run([6]);
    await expect(late).rejects.toBeInstanceOf(DatabaseUnavailableError);
    release();
    await holder;
    // One group at a time: the next call is sent once the late one's transaction has ended.
    await grouped.run([7]);
    expect(await stored()).toEqual([1, 2, 3, 4, 5, 7]);
  });
});
