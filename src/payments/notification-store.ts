// Where payment notifications are stored (spec 4.6 steps 9-10), by group commit: the callbacks
// whose bodies arrived in the same turn of the event loop, or that waited for a connection, are
// stored by one statement in one transaction. Under load they share one round trip and one commit
// (the flush to disk, which PostgreSQL makes once per transaction); alone, a callback is sent at
// once, on its own.
import type { DatabaseHandle } from '../db/client.js';
import { unavailability } from '../db/errors.js';

/** receive_payment_notification's arguments (migrations/0005_…), in its order. */
export type ReceiveArguments = [
  tenant: string,
  invoice: string,
  transaction: string,
  status: string,
  gateway: string,
  store: boolean,
  amount: string | null,
  currency: string,
  moves: string,
  payload: string | null,
  requestId: string,
];

/** What the statement says of one notification: its invoice as read, and what it did. */
export interface ReceivedRow {
  tenant_id: string;
  amount: string;
  currency: string;
  /** This (tenant, transaction_id, status, gateway) was stored before the statement began. */
  known: boolean;
  /** The statement stored the event (and moved invoice and trip). */
  stored: boolean;
}

/** One notification, sent as is and kept prepared: Drizzle would build the same text again on every callback. */
export const RECEIVE_STATEMENT = `select * from receive_payment_notification(
  $1::uuid, $2::uuid, $3::text, $4::text, $5::text, $6::boolean, $7::numeric, $8::text, $9::jsonb, $10::text, $11::text)`;

/** Several, in one transaction (migrations/0007_…): `item` is the index of the call a row answers. */
const RECEIVE_BATCH_STATEMENT = 'select * from receive_payment_notifications($1::jsonb)';

/** Notifications in one statement at most: a bound on how long one transaction holds its row locks. */
const MAX_BATCH = 32;

interface Waiting {
  call: ReceiveArguments;
  resolve(row: ReceivedRow | undefined): void;
  reject(error: unknown): void;
}

export class NotificationStore {
  private readonly waiting: Waiting[] = [];
  private inFlight = 0;
  private sendScheduled = false;
  /**
   * Statements under way at once: one per pool connection, so that a callback never waits for a
   * connection behind a statement it could have joined (measured: with 3 of 10, the same
   * throughput and a longer tail at half load).
   */
  private readonly maxInFlight: number;

  constructor(private readonly database: Pick<DatabaseHandle, 'query' | 'poolStatistics'>) {
    this.maxInFlight = database.poolStatistics().size;
  }

  /** The statement's row for this call, or undefined when its invoice does not exist. */
  receive(call: ReceiveArguments): Promise<ReceivedRow | undefined> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ call, resolve, reject });
      this.scheduleSend();
    });
  }

  /**
   * Sends once the current turn of the event loop is over: the callbacks whose bodies arrived in
   * the same turn go together, and none waits for more than that.
   */
  private scheduleSend(): void {
    if (this.sendScheduled || this.inFlight >= this.maxInFlight || this.waiting.length === 0) return;
    this.sendScheduled = true;
    setImmediate(() => {
      this.sendScheduled = false;
      while (this.inFlight < this.maxInFlight && this.waiting.length > 0) {
        this.inFlight++;
        void this.send(this.waiting.splice(0, MAX_BATCH)).finally(() => {
          this.inFlight--;
          this.scheduleSend();
        });
      }
    });
  }

  private async send(batch: Waiting[]): Promise<void> {
    if (batch.length === 1) return this.sendAlone(batch[0]);
    // Invoices locked in one order by every statement, PostgreSQL's (a uuid's lower-case text): two
    // batches never wait for each other's locks. The sort is stable: notifications of one invoice,
    // however its id is spelled, keep their order.
    const invoiceOf = (waiting: Waiting) => waiting.call[1].toLowerCase();
    batch.sort((a, b) => (invoiceOf(a) < invoiceOf(b) ? -1 : invoiceOf(a) > invoiceOf(b) ? 1 : 0));
    let rows: (ReceivedRow & { item: number })[];
    try {
      rows = await this.database.query(RECEIVE_BATCH_STATEMENT, [JSON.stringify(batch.map((each) => each.call))]);
    } catch (error) {
      if (unavailability(error)) {
        for (const each of batch) each.reject(error);
        return;
      }
      // One notification failed the transaction (a payload jsonb cannot hold, a deadlock between
      // trips): nothing was stored, and each is sent again alone to get its own answer.
      await Promise.all(batch.map((each) => this.sendAlone(each)));
      return;
    }
    const answered = new Array<ReceivedRow | undefined>(batch.length);
    for (const row of rows) answered[row.item] = row;
    for (const [index, each] of batch.entries()) each.resolve(answered[index]);
  }

  private async sendAlone(waiting: Waiting): Promise<void> {
    try {
      const [row] = await this.database.query<ReceivedRow>(RECEIVE_STATEMENT, waiting.call);
      waiting.resolve(row);
    } catch (error) {
      waiting.reject(error);
    }
  }
}
