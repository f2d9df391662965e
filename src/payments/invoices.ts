// Invoices: created by operators (or the booking flow) for a tenant and optionally a trip; their
// status then moves only through the payment callback (callback.ts). Amounts stay decimal text.
import { and, asc, desc, eq, gte, lt, max, sql } from 'drizzle-orm';
import type { Database, Executor } from '../db/client.js';
import { invoices, paymentDeliveries, paymentEvents, tenants, trips } from '../db/schema.js';
import { conflict, invalidField, notFound } from '../errors.js';
import { setTripStatus } from '../trips/status.js';
import { minorUnits, validateInvoiceAmount } from './money.js';
import type { PaymentQueue } from './queue.js';

export type InvoiceRow = typeof invoices.$inferSelect;
export type PaymentEventRow = typeof paymentEvents.$inferSelect;
export type PaymentDeliveryRow = typeof paymentDeliveries.$inferSelect;

interface NewInvoice {
  tenant_id: string;
  amount: string;
  currency: string;
  trip_id?: string | null;
}

/** The amount as stored: the currency's minor-unit places exactly ("100" SAR is "100.00"). */
function checkedAmount(amount: string, currency: string): string {
  const result = validateInvoiceAmount(amount, currency);
  if (result.ok) return result.amount;
  switch (result.reason) {
    case 'unknown_currency':
      throw invalidField('currency', 'must be an ISO 4217 currency code, such as SAR');
    case 'not_a_decimal':
      throw invalidField('amount', 'must be a decimal string such as "100.00"');
    case 'not_positive':
      throw invalidField('amount', 'must be greater than zero');
    case 'too_many_places':
      throw invalidField('amount', `has more decimal places than ${currency} has (${minorUnits(currency)})`);
  }
}

/**
 * Creates a pending invoice, moves its trip to `pending_payment`, and in the same transaction
 * either enqueues the payment request or, for a tenant without a payment endpoint, records that
 * as a failed delivery attempt (there is nothing to retry).
 */
export async function createInvoice(db: Database, queue: PaymentQueue, input: NewInvoice): Promise<InvoiceRow> {
  const amount = checkedAmount(input.amount, input.currency);
  return db.transaction(async (tx) => {
    const [tenant] = await tx.select().from(tenants).where(eq(tenants.id, input.tenant_id));
    if (!tenant) throw notFound('Tenant');
    if (!tenant.isActive) throw conflict('The tenant is inactive: it cannot be invoiced.');
    const tripId = input.trip_id ?? null;
    if (tripId) {
      const [trip] = await tx.select({ tenantId: trips.tenantId }).from(trips).where(eq(trips.id, tripId));
      if (!trip) throw notFound('Trip');
      if (trip.tenantId !== tenant.id) throw invalidField('trip_id', 'belongs to another tenant');
    }
    const [invoice] = await tx
      .insert(invoices)
      .values({ tenantId: tenant.id, tripId, amount, currency: input.currency })
      .returning();
    if (tripId) await setTripStatus(tx, tripId, 'pending_payment');
    if (tenant.paymentEndpointUrl) {
      await queue.enqueue(tx, { invoice_id: invoice.id, attempt: 1 });
    } else {
      await tx.insert(paymentDeliveries).values({
        invoiceId: invoice.id,
        attempt: 1,
        error: 'tenant has no payment endpoint configured (final: not retried)',
      });
    }
    return invoice;
  });
}

export async function getInvoice(db: Executor, id: string): Promise<InvoiceRow> {
  const [invoice] = await db.select().from(invoices).where(eq(invoices.id, id));
  if (!invoice) throw notFound('Invoice');
  return invoice;
}

/**
 * The invoice's stored notifications, oldest first, each with its payload as JSON text: parsed
 * losslessly by the reader, its numbers keep their digits (`100.10` stays so).
 */
export async function listPaymentEvents(
  db: Executor,
  invoiceId: string,
): Promise<{ event: PaymentEventRow; payloadJson: string }[]> {
  return db
    .select({ event: paymentEvents, payloadJson: sql<string>`${paymentEvents.payload}::text` })
    .from(paymentEvents)
    .where(eq(paymentEvents.invoiceId, invoiceId))
    .orderBy(asc(paymentEvents.receivedAt), asc(paymentEvents.id));
}

/** Every attempt to deliver the invoice's payment request, in order. */
export async function listDeliveries(db: Executor, invoiceId: string): Promise<PaymentDeliveryRow[]> {
  return db
    .select()
    .from(paymentDeliveries)
    .where(eq(paymentDeliveries.invoiceId, invoiceId))
    .orderBy(asc(paymentDeliveries.attempt), asc(paymentDeliveries.attemptedAt));
}

/**
 * Enqueues one more attempt of the invoice's payment request now, whatever came before (a final
 * failure, giving up after a day): the operator asks for it. Refused once the partner has reported
 * an outcome, for the same reason retries stop then. Returns the attempt's number.
 */
export async function resendPaymentRequest(db: Database, queue: PaymentQueue, invoiceId: string): Promise<number> {
  return db.transaction(async (tx) => {
    // Locked so that a notification moving the invoice meanwhile waits for this to commit.
    const [invoice] = await tx.select().from(invoices).where(eq(invoices.id, invoiceId)).for('update');
    if (!invoice) throw notFound('Invoice');
    if (invoice.status !== 'pending') {
      throw conflict(
        `The invoice is ${invoice.status}: the partner has reported an outcome, so its payment request is not sent again.`,
      );
    }
    const [{ last }] = await tx
      .select({ last: max(paymentDeliveries.attempt) })
      .from(paymentDeliveries)
      .where(eq(paymentDeliveries.invoiceId, invoiceId));
    const attempt = (last ?? 0) + 1;
    await queue.enqueue(tx, { invoice_id: invoiceId, attempt });
    return attempt;
  });
}

export interface InvoiceFilter {
  tenantId?: string;
  status?: string;
  /** Created at or after. */
  from?: Date;
  /** Created before. */
  to?: Date;
  limit: number;
  offset: number;
}

export interface InvoiceListing {
  invoices: (InvoiceRow & { tenantName: string })[];
  /** Whether another page follows. */
  more: boolean;
}

/** Invoices matching `filter`, newest first, one page. */
export async function listInvoices(db: Executor, filter: InvoiceFilter): Promise<InvoiceListing> {
  const rows = await db
    .select({ invoice: invoices, tenantName: tenants.name })
    .from(invoices)
    .innerJoin(tenants, eq(tenants.id, invoices.tenantId))
    .where(
      and(
        filter.tenantId ? eq(invoices.tenantId, filter.tenantId) : undefined,
        filter.status ? eq(invoices.status, filter.status) : undefined,
        filter.from ? gte(invoices.createdAt, filter.from) : undefined,
        filter.to ? lt(invoices.createdAt, filter.to) : undefined,
      ),
    )
    .orderBy(desc(invoices.createdAt), desc(invoices.id))
    .limit(filter.limit + 1)
    .offset(filter.offset);
  return {
    invoices: rows.slice(0, filter.limit).map((row) => ({ ...row.invoice, tenantName: row.tenantName })),
    more: rows.length > filter.limit,
  };
}

/** Everything that happened to an invoice, for one timeline: its tenant, trip, attempts and notifications. */
export async function invoiceHistory(db: Executor, id: string) {
  const [found] = await db
    .select({ invoice: invoices, tenant: tenants, trip: { id: trips.id, title: trips.title, status: trips.status } })
    .from(invoices)
    .innerJoin(tenants, eq(tenants.id, invoices.tenantId))
    .leftJoin(trips, eq(trips.id, invoices.tripId))
    .where(eq(invoices.id, id));
  if (!found) throw notFound('Invoice');
  const [deliveries, events] = await Promise.all([listDeliveries(db, id), listPaymentEvents(db, id)]);
  return { ...found, deliveries, events };
}
