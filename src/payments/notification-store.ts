// The payment callback's two statements (migrations/0030_…), sent by group commit (src/db/group-commit.ts):
// the callbacks whose bodies arrived in the same turn of the event loop, or that waited while
// earlier statements were under way, are read by one statement, and those the rule accepts stored
// by one statement in one transaction. Under load they share one round trip, one commit and one
// insert and one update for all. What to answer is decided in callback.ts, never here.
import type { DatabaseHandle, DedicatedConnections } from '../db/client.js';
import { answerEach, GroupCommit, itemsJson, type Waiting } from '../db/group-commit.js';
import { statement } from '../db/statements.js';
import type { Mode } from '../tenants/index.js';
import type { TripStatus } from '../trips/index.js';
import type { InvoiceStatus, NotAppliedReason } from './notification.js';

/** What step 4 and step 9 read for one notification: payment_notification_invoices' fields. */
export interface InvoiceLookup {
  tenant: string;
  invoice_id: string;
  mode: Mode;
  transaction_id: string;
  status: string;
  gateway: string;
}

/** The invoice as read for one notification. */
export interface InvoiceRead {
  tenant_id: string;
  amount: string;
  currency: string;
  /** This (tenant, transaction_id, status, gateway) was stored before, in this mode. */
  known: boolean;
}

/**
 * The state a notification finds its invoice in under the row lock: its status, with
 * `/this_transaction` when its gateway_reference is the notification's transaction_id.
 */
export type InvoiceState = InvoiceStatus | `${InvoiceStatus}/this_transaction`;

/** What the notification does from one state its invoice may be in when locked. */
export interface PlannedMove {
  next: InvoiceStatus;
  applied: boolean;
  paid_at: boolean;
  /** The trip's new status, when the invoice moves into `paid` or `refunded`. */
  trip: TripStatus | null;
  /** Stored on the event; null when applied. */
  not_applied_reason: NotAppliedReason | null;
  /** Flags the invoice: the traveller may have paid twice. */
  possible_double_charge: boolean;
}

/** A notification the rule accepted, to store: store_payment_notifications' fields. */
export interface AcceptedNotification {
  tenant: string;
  invoice_id: string;
  /** The key's: the tuple is a duplicate only of one stored in this mode. */
  mode: Mode;
  transaction_id: string;
  status: string;
  gateway: string;
  /** Its move from each state: the statement picks the one of the state it reads under the lock. */
  moves: Record<InvoiceState, PlannedMove>;
  /** The body as JSON text, stored as the event's payload. */
  payload: string;
  request_id: string;
}

/** What storing one notification did: stored (and why it did not move the invoice, if it did not), or not. */
export type StoreOutcome =
  | { stored: true; notAppliedReason: NotAppliedReason | null }
  | { stored: false; why: 'stored_before' | 'invoice_gone' };

const INVOICE_GONE: StoreOutcome = { stored: false, why: 'invoice_gone' };
const STORED_BEFORE: StoreOutcome = { stored: false, why: 'stored_before' };

/** Each statement takes its group as a jsonb array of objects with these fields and an `item` index. */
export const READ_STATEMENT = statement<[items: string], InvoiceRead & { item: number }>(
  'select * from payment_notification_invoices($1::jsonb)',
);
export const STORE_STATEMENT = statement<
  [items: string],
  { item: number; stored: boolean; not_applied_reason: NotAppliedReason | null }
>('select * from store_payment_notifications($1::jsonb)');

/** Notifications in one statement at most: a bound on how long one transaction holds its row locks. */
const MAX_BATCH = 32;

/**
 * Statements under way at once, each on a connection of the store's own (DatabaseHandle.dedicatedConnections): a
 * read, and two stores, one committing while the next group fills. Reads do not wait behind a
 * commit. More split the same callbacks into smaller groups that each pay a commit and compete
 * with the service for the cores; under more load the groups grow instead, up to MAX_BATCH.
 */
const READS_IN_FLIGHT = 1;
const STORES_IN_FLIGHT = 2;

type Reading = Waiting<InvoiceLookup, InvoiceRead | undefined>;
type Storing = Waiting<AcceptedNotification, StoreOutcome>;

export class NotificationStore {
  /** READS_IN_FLIGHT + STORES_IN_FLIGHT connections of the store's own, one statement under way on each. */
  private readonly connections: DedicatedConnections;
  // A callback's wait behind a group under way counts toward its deadline.
  private readonly reads: GroupCommit<InvoiceLookup, InvoiceRead | undefined>;
  private readonly stores: GroupCommit<AcceptedNotification, StoreOutcome>;

  constructor(database: Pick<DatabaseHandle, 'dedicatedConnections'>) {
    this.connections = database.dedicatedConnections(READS_IN_FLIGHT + STORES_IN_FLIGHT);
    const { deadlineMs } = this.connections;
    this.reads = new GroupCommit(READS_IN_FLIGHT, MAX_BATCH, (group: Reading[]) => this.sendRead(group), deadlineMs);
    this.stores = new GroupCommit(STORES_IN_FLIGHT, MAX_BATCH, (group: Storing[]) => this.sendStore(group), deadlineMs);
  }

  /** The notification's invoice in its mode, or undefined when there is none. */
  read(lookup: InvoiceLookup): Promise<InvoiceRead | undefined> {
    return this.reads.add(lookup);
  }

  /** Stores the event and moves invoice and trip; rejects with the database's error when it cannot. */
  store(notification: AcceptedNotification): Promise<StoreOutcome> {
    return this.stores.add(notification);
  }

  private async sendRead(group: Reading[]): Promise<void> {
    let rows: (InvoiceRead & { item: number })[];
    try {
      rows = await this.connections.run(READ_STATEMENT, [itemsJson(group)]);
    } catch (error) {
      for (const each of group) each.reject(error);
      return;
    }
    const answered = new Array<InvoiceRead | undefined>(group.length);
    for (const { item, ...invoice } of rows) answered[item] = invoice;
    for (const [index, each] of group.entries()) each.resolve(answered[index]);
  }

  /**
   * Invoices are locked in one order by every statement, PostgreSQL's (a uuid's lower-case text):
   * two statements never wait for each other's locks. The sort is stable: notifications of one
   * invoice, however its id is spelled, keep their order, and go in turn (inTurn).
   */
  private async sendStore(group: Storing[]): Promise<void> {
    const invoiceOf = (storing: Storing) => storing.call.invoice_id.toLowerCase();
    group.sort((a, b) => (invoiceOf(a) < invoiceOf(b) ? -1 : invoiceOf(a) > invoiceOf(b) ? 1 : 0));
    for (const set of inTurn(group)) await this.storeSet(set);
  }

  /** One statement for `set`; a notification that fails it (a payload jsonb cannot hold, a deadlock between trips) is stored alone. */
  private storeSet(set: Storing[]): Promise<void> {
    return answerEach(set, async (group) => {
      const rows = await this.connections.run(STORE_STATEMENT, [itemsJson(group)]);
      const outcomes = new Array<StoreOutcome>(group.length).fill(INVOICE_GONE);
      for (const { item, stored, not_applied_reason } of rows) {
        outcomes[item] = stored ? { stored, notAppliedReason: not_applied_reason } : STORED_BEFORE;
      }
      return outcomes;
    });
  }
}

/**
 * The group split into sets stored one after another, in which no invoice and no (tenant,
 * transaction_id, status, gateway) appears twice: within one statement no notification sees what
 * another stores, so a later one of the same invoice or tuple goes in a later set, and sees it.
 */
function inTurn(group: Storing[]): Storing[][] {
  const sets: Storing[][] = [];
  const lastSet = new Map<string, number>();
  for (const storing of group) {
    const { tenant, invoice_id, transaction_id, status, gateway } = storing.call;
    const keys = [invoice_id.toLowerCase(), `${tenant}\n${transaction_id}\n${status}\n${gateway}`];
    const index = Math.max(...keys.map((key) => lastSet.get(key) ?? -1)) + 1;
    for (const key of keys) lastSet.set(key, index);
    if (index === sets.length) sets.push([]);
    sets[index].push(storing);
  }
  return sets;
}
