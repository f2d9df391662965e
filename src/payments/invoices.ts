// Invoices: created by operators (or the booking flow) for a tenant and optionally a trip; their
// status then moves only through the payment callback (callback.ts). Amounts stay decimal text.
import { createHash } from 'node:crypto';
import { and, asc, count, desc, eq, gt, gte, lt, lte, max, or, sql } from 'drizzle-orm';
import { type AuditEventInput, recordAuditEvent } from '../audit/index.js';
import { type Database, type Executor, readInOneSnapshot, type Transaction } from '../db/client.js';
import { isUniqueViolation } from '../db/errors.js';
import { invoiceIdempotencyKeys, invoices, paymentDeliveries, paymentEvents, tenants, trips } from '../db/schema.js';
import { conflict, invalidField, notFound } from '../errors.js';
import { type Mode, paymentEndpointIn } from '../tenants/index.js';
import { isUuid } from '../text.js';
import { setTripStatus } from '../trips/index.js';
import type { PaymentRequests } from './delivery/requests.js';
import { minorUnits, validateInvoiceAmount } from './money.js';
import { listRefusedNotifications } from './refusals.js';

export type InvoiceRow = typeof invoices.$inferSelect;
export type PaymentEventRow = typeof paymentEvents.$inferSelect;
export type PaymentDeliveryRow = typeof paymentDeliveries.$inferSelect;

interface NewInvoice {
  tenant_id: string;
  amount: string;
  currency: string;
  trip_id?: string | null;
  /** `test` for a partner's test invoice; default `live`. */
  mode?: Mode;
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

/** How long an `Idempotency-Key` of invoice creation is honoured. */
export const IDEMPOTENCY_WINDOW_HOURS = 24;

export interface CreatedInvoice {
  invoice: InvoiceRow;
  /** True when an earlier request with the same Idempotency-Key made it: nothing new was created. */
  replayed: boolean;
}

/** What makes two creation requests "the same body": the fields as they would be stored. */
function requestDigest(input: NewInvoice, amount: string): string {
  const fields = [input.tenant_id, amount, input.currency, input.trip_id ?? null, input.mode ?? 'live'];
  return createHash('sha256').update(JSON.stringify(fields)).digest('hex');
}

export const idempotencyKeyReused = (invoiceId: string) =>
  `This Idempotency-Key was used in the last ${IDEMPOTENCY_WINDOW_HOURS} h with a different body ` +
  `(invoice ${invoiceId}); use a new key for a new invoice.`;
export const INACTIVE_TENANT = 'The tenant is inactive: it cannot be invoiced.';

const withinWindow = sql`now() - make_interval(hours => ${IDEMPOTENCY_WINDOW_HOURS})`;

/**
 * The invoice an earlier request with this key made within the window; a 409 when that request
 * had another body; null when the key is new (or older than the window).
 */
async function earlierInvoice(db: Executor, key: string, digest: string): Promise<InvoiceRow | null> {
  const [found] = await db
    .select({ digest: invoiceIdempotencyKeys.requestDigest, invoice: invoices })
    .from(invoiceIdempotencyKeys)
    .innerJoin(invoices, eq(invoices.id, invoiceIdempotencyKeys.invoiceId))
    .where(and(eq(invoiceIdempotencyKeys.key, key), gt(invoiceIdempotencyKeys.createdAt, withinWindow)));
  if (!found) return null;
  if (found.digest !== digest) {
    throw conflict(idempotencyKeyReused(found.invoice.id));
  }
  return found.invoice;
}

/**
 * Creates a pending invoice, moves its trip to `pending_payment`, and in the same transaction
 * either enqueues the payment request (handed to this process's worker at commit) or, for a tenant
 * without a payment endpoint, records that as a failed attempt (counted with the worker's). With an `idempotencyKey`, a repeat of
 * the same body within 24 h returns the first invoice instead, and another body is a 409. `audit`,
 * an operator's change, is recorded in the same transaction (or alone for a repeat).
 */
export async function createInvoice(
  db: Database,
  requests: PaymentRequests,
  input: NewInvoice,
  idempotencyKey?: string,
  audit?: (invoiceId: string) => AuditEventInput,
): Promise<CreatedInvoice> {
  const amount = checkedAmount(input.amount, input.currency);
  const digest = requestDigest(input, amount);
  const replay = async (earlier: InvoiceRow): Promise<CreatedInvoice> => {
    if (audit) await recordAuditEvent(db, audit(earlier.id));
    return { invoice: earlier, replayed: true };
  };
  if (idempotencyKey) {
    const earlier = await earlierInvoice(db, idempotencyKey, digest);
    if (earlier) return replay(earlier);
  }
  try {
    const { invoice, enqueued } = await db.transaction(async (tx) => {
      const created = await insertInvoice(tx, requests, input, amount);
      if (audit) await recordAuditEvent(tx, audit(created.invoice.id));
      if (idempotencyKey) {
        await tx
          .delete(invoiceIdempotencyKeys)
          .where(
            and(eq(invoiceIdempotencyKeys.key, idempotencyKey), lte(invoiceIdempotencyKeys.createdAt, withinWindow)),
          );
        await tx
          .insert(invoiceIdempotencyKeys)
          .values({ key: idempotencyKey, requestDigest: digest, invoiceId: created.invoice.id });
      }
      return created;
    });
    // Committed: this process's worker starts on it, or the attempt that could not be made is counted.
    if (enqueued) requests.announce();
    else requests.countUnsent(invoice.mode);
    return { invoice, replayed: false };
  } catch (error) {
    // A concurrent request with the same key committed first: this one rolled back; answer as it did.
    const earlier =
      idempotencyKey && isUniqueViolation(error) ? await earlierInvoice(db, idempotencyKey, digest) : null;
    if (earlier) return replay(earlier);
    throw error;
  }
}

/**
 * An invoice names only a trip of its own tenant and mode (DECISIONS §11), and moves it as
 * DECISIONS §6 says: a test invoice its test trip, never a live one.
 */
async function insertInvoice(tx: Transaction, requests: PaymentRequests, input: NewInvoice, amount: string) {
  const mode = input.mode ?? 'live';
  const [tenant] = await tx.select().from(tenants).where(eq(tenants.id, input.tenant_id));
  if (!tenant) throw notFound('Tenant');
  if (!tenant.isActive) throw conflict(INACTIVE_TENANT);
  const tripId = input.trip_id ?? null;
  if (tripId) {
    const [trip] = await tx
      .select({ tenantId: trips.tenantId, mode: trips.mode })
      .from(trips)
      .where(eq(trips.id, tripId));
    if (!trip) throw notFound('Trip');
    // Test invoices are the partner's own requests, where another tenant's or mode's object is one
    // that does not exist; an operator is told which rule the trip breaks.
    if (mode === 'test' && (trip.tenantId !== tenant.id || trip.mode !== mode)) throw notFound('Trip');
    if (trip.tenantId !== tenant.id) throw invalidField('trip_id', 'belongs to another tenant');
    if (trip.mode !== mode) throw invalidField('trip_id', 'is a test trip: a live invoice names only a live trip');
  }
  const [invoice] = await tx
    .insert(invoices)
    .values({ tenantId: tenant.id, tripId, amount, currency: input.currency, mode })
    .returning();
  if (tripId) await setTripStatus(tx, tripId, 'pending_payment');
  if (paymentEndpointIn(tenant, mode)) {
    await requests.enqueue(tx, invoice);
    return { invoice, enqueued: true };
  }
  await tx.insert(paymentDeliveries).values({
    invoiceId: invoice.id,
    attempt: 1,
    error: `tenant has no ${mode === 'test' ? 'test ' : ''}payment endpoint configured (final: not retried)`,
  });
  return { invoice, enqueued: false };
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

export const outcomeAlreadyReported = (status: string) =>
  `The invoice is ${status}: the partner has reported an outcome, so its payment request is not sent again.`;

/**
 * Asks for one more attempt of the invoice's payment request now, whatever came before (a final
 * failure, giving up after a day): the operator or the partner asks for it. Refused once the
 * partner has reported an outcome, for the same reason retries stop then. With `scope` (a
 * partner's), an invoice of another tenant or mode is a 404. Returns the attempt's number.
 */
export async function resendPaymentRequest(
  db: Database,
  requests: PaymentRequests,
  invoiceId: string,
  scope?: { tenantId: string; mode: Mode },
): Promise<number> {
  const attempt = await db.transaction(async (tx) => {
    await requests.lock(tx, invoiceId);
    // Locked so that a notification moving the invoice meanwhile waits for this to commit.
    const [invoice] = await tx
      .select()
      .from(invoices)
      .where(
        and(
          eq(invoices.id, invoiceId),
          scope && eq(invoices.tenantId, scope.tenantId),
          scope && eq(invoices.mode, scope.mode),
        ),
      )
      .for('update');
    if (!invoice) throw notFound(scope ? 'Payment request' : 'Invoice');
    if (invoice.status !== 'pending') {
      throw conflict(outcomeAlreadyReported(invoice.status));
    }
    const [{ last }] = await tx
      .select({ last: max(paymentDeliveries.attempt) })
      .from(paymentDeliveries)
      .where(eq(paymentDeliveries.invoiceId, invoiceId));
    return requests.requestAgain(tx, invoice, last ?? 0);
  });
  requests.announce();
  return attempt;
}

export interface InvoiceFilter {
  tenantId?: string;
  status?: string;
  mode?: Mode;
  /** true: only those flagged (a second `paid` under another transaction_id came: planTransition); false: only the others. */
  possibleDoubleCharge?: boolean;
  /** Created at or after. */
  from?: Date;
  /** Created before. */
  to?: Date;
  limit: number;
  offset: number;
}

export interface InvoiceListing {
  invoices: (InvoiceRow & { tenantName: string })[];
  /** How many invoices match the filter, on every page. */
  count: number;
}

/** Invoices matching `filter`, newest first, one page, and how many match in all. */
export async function listInvoices(db: Executor, filter: InvoiceFilter): Promise<InvoiceListing> {
  const where = and(
    filter.tenantId ? eq(invoices.tenantId, filter.tenantId) : undefined,
    filter.status ? eq(invoices.status, filter.status) : undefined,
    filter.mode ? eq(invoices.mode, filter.mode) : undefined,
    filter.possibleDoubleCharge === undefined
      ? undefined
      : eq(invoices.possibleDoubleCharge, filter.possibleDoubleCharge),
    filter.from ? gte(invoices.createdAt, filter.from) : undefined,
    filter.to ? lt(invoices.createdAt, filter.to) : undefined,
  );
  const [counted, rows] = await Promise.all([
    db.$count(invoices, where),
    db
      .select({ invoice: invoices, tenantName: tenants.name })
      .from(invoices)
      .innerJoin(tenants, eq(tenants.id, invoices.tenantId))
      .where(where)
      .orderBy(desc(invoices.createdAt), desc(invoices.id))
      .limit(filter.limit)
      .offset(filter.offset),
  ]);
  return { invoices: rows.map((row) => ({ ...row.invoice, tenantName: row.tenantName })), count: counted };
}

/** How many of `mode`'s invoices are flagged as possible double charges. */
export async function possibleDoubleCharges(db: Executor, mode: Mode): Promise<number> {
  const [counted] = await db
    .select({ count: count() })
    .from(invoices)
    .where(and(eq(invoices.possibleDoubleCharge, true), eq(invoices.mode, mode)));
  return counted.count;
}

/**
 * Everything that happened to an invoice, for one timeline: its tenant, trip, attempts and
 * notifications, in one snapshot (a paid invoice is never shown without the event that paid it).
 */
export function invoiceHistory(db: Database, id: string) {
  return readInOneSnapshot(db, async (tx) => {
    const [found] = await tx
      .select({ invoice: invoices, tenant: tenants, trip: { id: trips.id, title: trips.title, status: trips.status } })
      .from(invoices)
      .innerJoin(tenants, eq(tenants.id, invoices.tenantId))
      .leftJoin(trips, eq(trips.id, invoices.tripId))
      .where(eq(invoices.id, id));
    if (!found) throw notFound('Invoice');
    const deliveries = await listDeliveries(tx, id);
    const events = await listPaymentEvents(tx, id);
    const refused = await listRefusedNotifications(tx, id);
    return { ...found, deliveries, events, refused };
  });
}

/** The longest text searched for: transaction ids are short references. */
const SEARCH_MAX_CHARACTERS = 255;

/**
 * Invoices an operator looks for by what a partner quotes: the invoice id, or a transaction id of
 * one of its accepted notifications (any tenant, any mode), newest first. The transaction is looked
 * up per tenant through the notifications' unique index, so no index is added to the callback's
 * insert.
 */
export async function searchInvoices(db: Executor, term: string): Promise<InvoiceListing['invoices']> {
  const text = term.trim();
  if (text === '' || text.length > SEARCH_MAX_CHARACTERS) return [];
  const byTransaction = sql`select distinct e.invoice_id from tenants t
    cross join lateral (select invoice_id from payment_events
      where payment_events.tenant_id = t.id and payment_events.transaction_id = ${text}) e`;
  const rows = await db
    .select({ invoice: invoices, tenantName: tenants.name })
    .from(invoices)
    .innerJoin(tenants, eq(tenants.id, invoices.tenantId))
    .where(
      or(isUuid(text) ? eq(invoices.id, text.toLowerCase()) : undefined, sql`${invoices.id} in (${byTransaction})`),
    )
    .orderBy(desc(invoices.createdAt), desc(invoices.id))
    .limit(100);
  return rows.map((row) => ({ ...row.invoice, tenantName: row.tenantName }));
}
