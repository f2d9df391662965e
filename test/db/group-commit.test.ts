// Group commit with a request deadline: a call that waits behind a group under way is answered
// within its own deadline, as the database unavailable, and is never sent afterwards.
import { describe, expect, it } from 'vitest';
import { DatabaseUnavailableError } from '../../src/db/errors.js';
import { GroupCommit, type Waiting } from '../../src/db/group-commit.js';

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
