// What must hold after any fault, read from the database itself (issue 15): every notification
// answered 200 `success` is stored exactly once and has moved its invoice; nothing is stored twice;
// no invoice moved backwards; no event says `applied` while its invoice did not move; trip status
// always matches its invoice.
import { startEmbeddedServer } from '../../../src/db/embedded-server.js';
import { createLogger } from '../../../src/logger.js';
import { connectTo } from '../../support/database.js';
import type { CallbackLoad, Partner } from './callback-load.js';

/** A statement on the database checked; `Row` is what it returns. */
export type Query = <Row = Record<string, unknown>>(text: string, values?: unknown[]) => Promise<Row[]>;

/**
 * Runs `task` with a connection of its own to the database: on a DATA_DIR, its embedded server
 * started for the check, once no service holds the directory.
 */
export async function withDatabase<T>(
  target: { databaseUrl?: string; dataDir?: string },
  task: (query: Query) => Promise<T>,
): Promise<T> {
  const server = target.databaseUrl ? null : await startEmbeddedServer(target.dataDir!, createLogger('silent'));
  const sql = connectTo(target.databaseUrl ?? server!.url);
  try {
    return await task(
      async <Row>(text: string, values: unknown[] = []) => [...(await sql.unsafe(text, values as never[]))] as Row[],
    );
  } finally {
    await sql.end({ timeout: 5 });
    await server?.stop();
  }
}

const ORDER: Record<string, number> = { pending: 0, failed: 1, paid: 2, refunded: 3 };

interface InvariantReport {
  rowsChecked: number;
  violations: string[];
}

interface EventRow {
  transaction_id: string;
  status: string;
  gateway: string;
  invoice_id: string;
  applied: boolean;
  status_before: string;
  status_after: string;
}

interface InvoiceRow {
  id: string;
  status: string;
  trip_id: string | null;
  trip_status: string | null;
}

/** Every notification answered `success` stored once and its invoice paid; nothing stored twice or unsent. */
function checkNotifications(load: CallbackLoad, events: EventRow[], invoiceStatus: Map<string, string>): string[] {
  const violations: string[] = [];
  const stored = new Map<string, EventRow[]>();
  for (const event of events) {
    const key = `${event.transaction_id}/${event.status}/${event.gateway}`;
    stored.set(key, [...(stored.get(key) ?? []), event]);
  }
  for (const notification of load.notifications) {
    if (notification.accepted !== 'success') continue;
    const rows = stored.get(`${notification.transactionId}/paid/tap`) ?? [];
    if (rows.length !== 1)
      violations.push(`${notification.transactionId} answered success but stored ${rows.length} times`);
    else if (invoiceStatus.get(rows[0].invoice_id) !== 'paid') {
      violations.push(`${notification.transactionId} answered success but its invoice did not move to paid`);
    }
  }
  const sent = new Set(load.notifications.map((notification) => `${notification.transactionId}/paid/tap`));
  for (const [key, rows] of stored) {
    if (rows.length > 1) violations.push(`${key} stored ${rows.length} times`);
    if (!sent.has(key)) violations.push(`${key} stored but never sent`);
  }
  return violations;
}

/** A paid invoice left pending exactly once, a pending one never; its trip in step with it. */
function checkInvoice(invoice: InvoiceRow, moves: number): string[] {
  const violations: string[] = [];
  if (invoice.status === 'paid' && moves !== 1) violations.push(`invoice ${invoice.id} left pending ${moves} times`);
  if (invoice.status === 'pending' && moves !== 0) violations.push(`invoice ${invoice.id} moved but is pending`);
  const expectedTrip = invoice.status === 'paid' ? 'booked' : 'pending_payment';
  if (invoice.trip_id && invoice.trip_status !== expectedTrip) {
    violations.push(`trip of invoice ${invoice.id} is ${invoice.trip_status} while the invoice is ${invoice.status}`);
  }
  return violations;
}

/** No move backwards, no `applied` without the move, each paid invoice left pending once, trips in step. */
function checkTransitions(events: EventRow[], invoices: InvoiceRow[], invoiceStatus: Map<string, string>): string[] {
  const violations: string[] = [];
  const movedFromPending = new Map<string, number>();
  for (const event of events) {
    if (ORDER[event.status_after] < ORDER[event.status_before]) {
      violations.push(
        `${event.transaction_id} moved its invoice back (${event.status_before} → ${event.status_after})`,
      );
    }
    if (event.applied && invoiceStatus.get(event.invoice_id) !== event.status_after) {
      violations.push(`${event.transaction_id} says applied but its invoice is ${invoiceStatus.get(event.invoice_id)}`);
    }
    if (event.status_before === 'pending') {
      movedFromPending.set(event.invoice_id, (movedFromPending.get(event.invoice_id) ?? 0) + 1);
    }
  }
  for (const invoice of invoices) violations.push(...checkInvoice(invoice, movedFromPending.get(invoice.id) ?? 0));
  return violations;
}

export async function checkInvariants(query: Query, partner: Partner, load: CallbackLoad): Promise<InvariantReport> {
  const events: EventRow[] = await query(
    `select transaction_id, status, gateway, invoice_id::text, applied, status_before, status_after
       from payment_events where tenant_id = $1`,
    [partner.tenantId],
  );
  const invoices: InvoiceRow[] = await query(
    `select i.id::text, i.status, i.trip_id, t.status as trip_status
       from invoices i left join trips t on t.id = i.trip_id where i.tenant_id = $1`,
    [partner.tenantId],
  );
  const invoiceStatus = new Map(invoices.map((row) => [row.id, row.status]));
  const violations = [
    ...checkNotifications(load, events, invoiceStatus),
    ...checkTransitions(events, invoices, invoiceStatus),
    ...load.unexpected.map((body) => `unexpected 200 body ${body}`),
  ];
  // Events, invoices and their trips.
  return { rowsChecked: events.length + 2 * invoices.length, violations };
}

/** The line each scenario prints: what was sent, how it was answered, what was checked. */
export function summary(scenario: string, load: CallbackLoad, report: InvariantReport, extra = ''): string {
  const held = report.violations.length === 0 ? 'all held' : `${report.violations.length} VIOLATED`;
  return (
    `[faults] ${scenario}: sent ${load.sent} (${load.describe()}), slowest ${load.slowestMs} ms, ` +
    `notifications ${load.notifications.length}, rows checked ${report.rowsChecked}, invariants ${held}` +
    (extra ? `, ${extra}` : '')
  );
}
