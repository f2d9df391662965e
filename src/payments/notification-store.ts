// Where payment notifications are stored (spec 4.6 steps 9-10), by group commit: the callbacks
// whose bodies arrived in the same turn of the event loop, or that waited while earlier ones were
// being stored, are stored by one statement in one transaction. Under load they share one round
// trip, one commit (the flush to disk, which PostgreSQL makes once per transaction) and, when none
// depends on another, one insert and one update for all; alone, a callback is sent at once, on its
// own.
import type { DatabaseHandle, DedicatedConnections } from '../db/client.js';
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
  mode: 'live' | 'test',
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
  $1::uuid, $2::uuid, $3::text, $4::text, $5::text, $6::boolean, $7::numeric, $8::text, $9::jsonb, $10::text, $11::text, $12::text)`;

/**
 * Several, in one transaction, as one set (migrations/0008_…): `item` is the index of the call a row
 * answers. Only for a group in which no invoice and no dedupe tuple appears twice.
 */
const RECEIVE_SET_STATEMENT = 'select * from receive_payment_notification_set($1::jsonb)';

/** Several, one after another in one transaction (migrations/0007_…), each seeing what the ones before it stored. */
const RECEIVE_IN_TURN_STATEMENT = 'select * from receive_payment_notifications($1::jsonb)';

/** Notifications in one statement at most: a bound on how long one transaction holds its row locks. */
const MAX_BATCH = 32;

/**
 * Statements under way at once, each on a connection of the store's own (DatabaseHandle.dedicatedConnections): one
 * being stored while the next one fills. More split the same callbacks into smaller groups that
 * each pay a commit, and compete with the service for the cores (measured on two cores shared with
 * PostgreSQL, unique callbacks at full load, in alternating slices against pgbench: 73% of its rate
 * with 2, 70% with 3, 69% with 1, 66% with 10; before the set statement, 66% with 2 and 57% with
 * 10, and at half that rate p99 6 ms with 2 against 8-14 ms with 10). Under more load the groups
 * grow instead, up to MAX_BATCH.
 */
const STATEMENTS_IN_FLIGHT = 2;

interface Waiting {
  call: ReceiveArguments;
  resolve(row: ReceivedRow | undefined): void;
  reject(error: unknown): void;
}

export class NotificationStore {
  private readonly waiting: Waiting[] = [];
  private inFlight = 0;
  private sendScheduled = false;
  /** STATEMENTS_IN_FLIGHT connections of the store's own, one statement under way on each. */
  private readonly lane: DedicatedConnections;

  constructor(database: Pick<DatabaseHandle, 'dedicatedConnections'>) {
    this.lane = database.dedicatedConnections(STATEMENTS_IN_FLIGHT);
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
    if (this.sendScheduled || this.inFlight >= this.lane.size || this.waiting.length === 0) return;
    this.sendScheduled = true;
    setImmediate(() => {
      this.sendScheduled = false;
      while (this.inFlight < this.lane.size && this.waiting.length > 0) {
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
      rows = await this.lane.query(independent(batch) ? RECEIVE_SET_STATEMENT : RECEIVE_IN_TURN_STATEMENT, [
        JSON.stringify(batch.map((each) => each.call)),
      ]);
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
      const [row] = await this.lane.query<ReceivedRow>(RECEIVE_STATEMENT, waiting.call);
      waiting.resolve(row);
    } catch (error) {
      waiting.reject(error);
    }
  }
}

/**
 * No invoice and no (tenant, transaction_id, status, gateway) twice: no notification of the group
 * depends on what another one stores, and the group can be stored as one set. Keys that collide
 * for other reasons only send a group in turn, which is always right.
 */
function independent(batch: Waiting[]): boolean {
  const seen = new Set<string>();
  for (const { call } of batch) {
    const [tenant, invoice, transaction, status, gateway] = call;
    const invoiceKey = invoice.toLowerCase();
    const tupleKey = `${tenant}\n${transaction}\n${status}\n${gateway}`;
    if (seen.has(invoiceKey) || seen.has(tupleKey)) return false;
    seen.add(invoiceKey).add(tupleKey);
  }
  return true;
}
