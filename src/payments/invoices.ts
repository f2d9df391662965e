// Invoices: created by operators (or the booking flow) for a tenant and optionally a trip; their
// status then moves only through the payment callback (callback.ts). Amounts stay decimal text.
import { createHash, randomUUID } from 'node:crypto';
import { and, asc, count, desc, eq, gte, lt, max, or, sql } from 'drizzle-orm';
import { type AuditEventInput, auditEventRecord, insertAuditEvent, recordAuditEvent } from '../audit/index.js';
import { type Database, type DatabaseHandle, type Executor, readInOneSnapshot } from '../db/client.js';
import { isUniqueViolation } from '../db/errors.js';
import { GroupedTransactions } from '../db/group-commit.js';
import { invoices, paymentDeliveries, paymentEvents, tenants, trips } from '../db/schema.js';
import { type RunStatement, statement } from '../db/statements.js';
import { conflict, invalidField, notFound } from '../errors.js';
import type { Mode } from '../tenants/index.js';
import { isUuid } from '../text.js';
import { activeTraceparent } from '../tracing.js';
import { enqueueFirstAttempts, type PaymentRequests } from './delivery/requests.js';
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

/** An invoice as the statements below return it: its columns, timestamps as their text. */
interface InvoiceColumns {
  id: string;
  tenant_id: string;
  trip_id: string | null;
  amount: string;
  currency: string;
  status: string;
  gateway_reference: string | null;
  paid_at: string | null;
  payment_url: string | null;
  mode: Mode;
  possible_double_charge: boolean;
  created_at: string;
  updated_at: string;
}

function invoiceOf(row: InvoiceColumns): InvoiceRow {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    tripId: row.trip_id,
    amount: row.amount,
    currency: row.currency,
    status: row.status,
    gatewayReference: row.gateway_reference,
    paidAt: row.paid_at === null ? null : new Date(row.paid_at),
    paymentUrl: row.payment_url,
    mode: row.mode,
    possibleDoubleCharge: row.possible_double_charge,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}

const WITHIN_WINDOW = `now() - make_interval(hours => ${IDEMPOTENCY_WINDOW_HOURS})`;

/** An Idempotency-Key, and the digest of the request that sent it (requestDigest). */
interface KeyedRequest {
  key: string;
  digest: string;
}

/** The invoice an earlier request with the key `$1` made within the window, and that request's digest. */
const EARLIER_INVOICE = statement<[key: string], InvoiceColumns & { request_digest: string }>(
  `select k.request_digest, i.*
     from invoice_idempotency_keys k join invoices i on i.id = k.invoice_id
    where k.key = $1 and k.created_at > ${WITHIN_WINDOW}`,
);

/**
 * The invoice an earlier request with this key made within the window; a 409 when that request
 * had another body; null when the key is new (or older than the window).
 */
async function earlierInvoice(run: RunStatement, keyed: KeyedRequest): Promise<InvoiceRow | null> {
  const [found] = await run(EARLIER_INVOICE, [keyed.key]);
  if (!found) return null;
  if (found.request_digest !== keyed.digest) {
    throw conflict(idempotencyKeyReused(found.id));
  }
  return invoiceOf(found);
}

/** What CREATE_INVOICE read of the tenant and the trip, and the invoice when it made one. */
type Creation = {
  /** Null: no such tenant. */
  tenant_found_id: string | null;
  tenant_active: boolean | null;
  /** Whether its payment request was enqueued (the tenant has an endpoint for the mode). */
  enqueued: boolean | null;
  /** Null: no trip named, or no such trip. */
  trip_tenant_id: string | null;
  trip_mode: Mode | null;
} & ({ [Column in keyof InvoiceColumns]: null } | InvoiceColumns);

/**
 * Creates invoice `$1` in one statement when its tenant `$2` is active and its trip `$3` (or none)
 * is of that tenant and mode `$6` (DECISIONS §11): the invoice; its trip moved to
 * `pending_payment` (DECISIONS §6); its payment request when the tenant has an endpoint for the
 * mode (as paymentEndpointIn reads it), else the failed first attempt `$8`; the audit event `$9`
 * (auditEventRecord) when given; the Idempotency-Key `$10` with the request's digest `$11` when
 * given, in place of an expired one of the same key (deleted first: the insert reads the delete's
 * count). A key another request holds fails the statement with a unique violation, undoing it all.
 */
type CreationParams = [
  id: string,
  tenantId: string,
  tripId: string | null,
  amount: string,
  currency: string,
  mode: Mode,
  traceparent: string | null,
  unsentError: string,
  audit: string | null,
  idempotencyKey: string | null,
  digest: string | null,
];

export const CREATE_INVOICE = statement<CreationParams, Creation>(
  `with tenant as (
     select id, is_active,
            coalesce(case when $6::text = 'test' then test_payment_endpoint_url else payment_endpoint_url end, '')
              <> '' as has_endpoint
       from tenants where id = $2::uuid
   ),
   trip as (select tenant_id, mode from trips where id = $3::uuid),
   invoice as (
     insert into invoices (id, tenant_id, trip_id, amount, currency, mode)
     select $1::uuid, tenant.id, $3::uuid, $4::numeric, $5::text, $6::text from tenant
      where tenant.is_active
        and ($3::uuid is null or exists (select from trip where trip.tenant_id = tenant.id and trip.mode = $6::text))
     returning *
   ),
   moved_trip as (
     update trips set status = 'pending_payment', updated_at = now() where id = (select trip_id from invoice)
   ),
   requested as (select invoice.* from invoice join tenant on tenant.has_endpoint),
   request as (${enqueueFirstAttempts('requested', '$7::text')}),
   unsent as (
     insert into payment_deliveries (invoice_id, attempt, error)
     select invoice.id, 1, $8::text from invoice join tenant on not tenant.has_endpoint
   ),
   audit as (${insertAuditEvent('$9::jsonb')} where $9::jsonb is not null and exists (select from invoice)),
   expired_key as (
     delete from invoice_idempotency_keys where key = $10::text and created_at <= ${WITHIN_WINDOW} returning 1
   ),
   idempotency_key as (
     insert into invoice_idempotency_keys (key, request_digest, invoice_id)
     select $10::text, $11::text, invoice.id from invoice
      where $10::text is not null and (select count(*) from expired_key) >= 0
   )
   select tenant.id as tenant_found_id, tenant.is_active as tenant_active, tenant.has_endpoint as enqueued,
          trip.tenant_id as trip_tenant_id, trip.mode as trip_mode, invoice.*
     from (values (1)) as one (row) left join tenant on true left join trip on true left join invoice on true`,
);

/** Each database handle's invoice creations: those that arrive together share one transaction. */
const creations = new WeakMap<DatabaseHandle, GroupedTransactions<CreationParams, Creation>>();

function creationsOn(database: DatabaseHandle): GroupedTransactions<CreationParams, Creation> {
  let grouped = creations.get(database);
  if (!grouped) {
    grouped = new GroupedTransactions(database, CREATE_INVOICE);
    creations.set(database, grouped);
  }
  return grouped;
}

/**
 * Why CREATE_INVOICE made no invoice: an invoice names only a trip of its own tenant and mode
 * (DECISIONS §11). Test invoices are the partner's own requests, where another tenant's or mode's
 * trip is one that does not exist; an operator is told which rule the trip breaks.
 */
function refusal(found: Creation, mode: Mode) {
  if (found.tenant_found_id === null) return notFound('Tenant');
  if (!found.tenant_active) return conflict(INACTIVE_TENANT);
  if (found.trip_tenant_id === null) return notFound('Trip');
  const ownTenant = found.trip_tenant_id === found.tenant_found_id;
  if (mode === 'test' && (!ownTenant || found.trip_mode !== mode)) return notFound('Trip');
  if (!ownTenant) return invalidField('trip_id', 'belongs to another tenant');
  return invalidField('trip_id', 'is a test trip: a live invoice names only a live trip');
}

/**
 * Creates a pending invoice, moves its trip to `pending_payment`, and in the same transaction
 * either enqueues the payment request (handed to this process's worker at commit) or, for a tenant
 * without a payment endpoint, records that as a failed attempt (counted with the worker's). With an `idempotencyKey`, a repeat of
 * the same body within 24 h returns the first invoice instead, and another body is a 409. `audit`,
 * an operator's change, is recorded in the same transaction (or alone for a repeat).
 */
export async function createInvoice(
  database: DatabaseHandle,
  requests: PaymentRequests,
  input: NewInvoice,
  idempotencyKey?: string,
  audit?: (invoiceId: string) => AuditEventInput,
): Promise<CreatedInvoice> {
  const amount = checkedAmount(input.amount, input.currency);
  const keyed = idempotencyKey ? { key: idempotencyKey, digest: requestDigest(input, amount) } : null;
  const replay = async (earlier: InvoiceRow): Promise<CreatedInvoice> => {
    if (audit) await recordAuditEvent(database.db, audit(earlier.id));
    return { invoice: earlier, replayed: true };
  };
  if (keyed) {
    const earlier = await earlierInvoice(database.run, keyed);
    if (earlier) return replay(earlier);
  }
  const mode = input.mode ?? 'live';
  // Made here, so that the audit event names it in the statement that creates it.
  const id = randomUUID();
  let found: Creation;
  try {
    // A transaction (shared with the creations that arrive with it), not the statement alone: one
    // abandoned at the deadline rolls back rather than commit once its locks come, so that an
    // answered 503 never becomes an invoice later.
    [found] = await creationsOn(database).run([
      id,
      input.tenant_id,
      input.trip_id ?? null,
      amount,
      input.currency,
      mode,
      activeTraceparent(),
      `tenant has no ${mode === 'test' ? 'test ' : ''}payment endpoint configured (final: not retried)`,
      audit ? auditEventRecord(audit(id)) : null,
      keyed?.key ?? null,
      keyed?.digest ?? null,
    ]);
  } catch (error) {
    // A concurrent request with the same key committed first: this one rolled back; answer as it did.
    const earlier = keyed && isUniqueViolation(error) ? await earlierInvoice(database.run, keyed) : null;
    if (earlier) return replay(earlier);
    throw error;
  }
  if (found.id === null) throw refusal(found, mode);
  const invoice = invoiceOf(found);
  // Committed: this process's worker starts on it, or the attempt that could not be made is counted.
  if (found.enqueued) requests.announce();
  else requests.countUnsent(invoice.mode);
  return { invoice, replayed: false };
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
