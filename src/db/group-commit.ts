// Group commit in the service: the calls of one statement that arrive in the same turn of the event
// loop, or while earlier ones are under way, are sent together, as one statement and one
// transaction, so they share one round trip and one commit (the flush to disk, which PostgreSQL
// makes once per transaction). Alone, a call is sent at once, as a group of one. The payment
// callback's statements (src/payments/notification-store.ts) and the recording of payment request
// attempts (src/payments/delivery/requests.ts) go this way; an invoice's creation
// (src/payments/invoices.ts) goes as a grouped transaction, each call its own statement in it.
import { keepingActiveSpan } from '../tracing.js';
import type { DatabaseHandle } from './client.js';
import { DatabaseUnavailableError, unavailability } from './errors.js';
import type { RunStatement, Statement } from './statements.js';

export interface Waiting<Call, Answer> {
  call: Call;
  resolve(answer: Answer): void;
  reject(error: unknown): void;
  /** Set when the call was answered at its deadline, still waiting or under way. */
  expired?: boolean;
}

/**
 * The calls of one statement waiting to be sent, sent as groups of at most `maxGroup` once the
 * current turn of the event loop is over, with at most `limit` groups under way: none waits for
 * more than that turn, or for a group under way when `limit` are. With `deadlineMs` (a request's
 * statements), a call not answered within it from when it was added fails as the database
 * unavailable, and leaves the queue unsent if it is still there: the wait behind a group under
 * way counts, so a request never waits for two statements' deadlines in turn.
 */
export class GroupCommit<Call, Answer> {
  private readonly waiting: Waiting<Call, Answer>[] = [];
  private inFlight = 0;
  private sendScheduled = false;

  constructor(
    private readonly limit: number,
    private readonly maxGroup: number,
    private readonly send: (group: Waiting<Call, Answer>[]) => Promise<void>,
    private readonly deadlineMs?: number,
  ) {}

  add(call: Call): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const { deadlineMs } = this;
      if (deadlineMs === undefined) {
        this.waiting.push({ call, resolve, reject });
      } else {
        const timer = setTimeout(() => {
          waiting.expired = true;
          const index = this.waiting.indexOf(waiting);
          if (index >= 0) this.waiting.splice(index, 1);
          reject(new DatabaseUnavailableError(`database did not answer within ${deadlineMs} ms`));
        }, deadlineMs);
        const waiting: Waiting<Call, Answer> = {
          call,
          resolve: (answer) => {
            clearTimeout(timer);
            resolve(answer);
          },
          reject: (error) => {
            clearTimeout(timer);
            reject(error);
          },
        };
        this.waiting.push(waiting);
      }
      this.scheduleSend();
    });
  }

  private scheduleSend(): void {
    if (this.sendScheduled || this.inFlight >= this.limit || this.waiting.length === 0) return;
    this.sendScheduled = true;
    setImmediate(() => {
      this.sendScheduled = false;
      while (this.inFlight < this.limit && this.waiting.length > 0) {
        this.inFlight++;
        void this.send(this.waiting.splice(0, this.maxGroup)).finally(() => {
          this.inFlight--;
          this.scheduleSend();
        });
      }
    });
  }
}

/**
 * Sends `group` by `send`, which answers each call in the group's order, and hands each call its
 * answer. When the statement fails for one call (a value the database refuses, a deadlock) rather
 * than for all (the database unreachable), nothing was done, and each call is sent again alone to
 * get its own answer. A call answered at its deadline meanwhile is not sent, first or again: its
 * caller has been told that it was not done.
 */
export async function answerEach<Call, Answer>(
  group: Waiting<Call, Answer>[],
  send: (group: Waiting<Call, Answer>[]) => Promise<Answer[]>,
): Promise<void> {
  const live = group.filter((each) => !each.expired);
  if (live.length === 0) return;
  let answers: Answer[];
  try {
    answers = await send(live);
  } catch (error) {
    if (live.length === 1 || unavailability(error)) {
      for (const each of live) each.reject(error);
      return;
    }
    for (const each of live) await answerEach([each], send);
    return;
  }
  for (const [index, each] of live.entries()) each.resolve(answers[index]);
}

/** A group as a statement takes it: a JSON array of its calls, each with its index as `item`. */
export function itemsJson(group: Waiting<object, unknown>[]): string {
  return JSON.stringify(group.map((each, item) => ({ item, ...each.call })));
}

/** Calls of a grouped transaction sent together at most. */
const MAX_GROUPED_CALLS = 32;

/**
 * Calls of one statement that must not take effect once their caller has been answered: a lone
 * statement sent cannot be withdrawn, an uncommitted transaction can. The calls that arrive
 * together run in one transaction, each as its own statement, all sent at once, so that they share
 * BEGIN's and COMMIT's round trips and one flush to disk; alone, a call is a transaction of one.
 * One group is under way at a time: two never wait for each other's locks. A call answered at its
 * deadline (as the database unavailable) while its group is under way has the group roll back
 * rather than commit, and the others are answered as it was; a call that fails the transaction (a
 * key another call holds) has each call sent again alone, for its own answer.
 */
export class GroupedTransactions<Params extends readonly unknown[], Row> {
  private readonly calls: GroupCommit<(run: RunStatement) => Promise<Row[]>, Row[]>;

  constructor(
    database: Pick<DatabaseHandle, 'transact' | 'deadlineMs'>,
    private readonly statement: Statement<Params, Row>,
  ) {
    const send = (group: Waiting<(run: RunStatement) => Promise<Row[]>, Row[]>[]) =>
      database.transact(async (run) => {
        const answers = await Promise.all(group.map((each) => each.call(run)));
        if (group.some((each) => each.expired)) {
          throw new DatabaseUnavailableError('transaction rolled back: a caller was answered at its deadline');
        }
        return answers;
      });
    this.calls = new GroupCommit(1, MAX_GROUPED_CALLS, (group) => answerEach(group, send), database.deadlineMs);
  }

  run(params: Params): Promise<Row[]> {
    // Each statement a span of the work that asked for it, not of the group's first.
    return this.calls.add(keepingActiveSpan((run: RunStatement) => run(this.statement, params)));
  }
}
