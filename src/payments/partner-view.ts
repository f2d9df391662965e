// What a partner sees of its own payment conversation (and the operators' per-tenant view of it):
// its payment requests with every attempt, and its callbacks as recorded, accepted (payment_events)
// and refused (refusals.ts). Always within one tenant and, for a partner, one mode: another
// tenant's or the other mode's invoice is one that does not exist.
import { and, asc, count, desc, eq, gte, inArray, isNull, lt, max } from 'drizzle-orm';
import { type Database, type Executor, readInOneSnapshot, runIn } from '../db/client.js';
import { invoices, paymentDeliveries } from '../db/schema.js';
import { statement } from '../db/statements.js';
import { notFound } from '../errors.js';
import type { Page } from '../geo/index.js';
import type { Mode } from '../tenants/index.js';
import { paymentMessageId } from './delivery/deliver.js';
import type { InvoiceRow, PaymentDeliveryRow } from './invoices.js';
import { NOT_APPLIED_NOTES, type NotAppliedReason, storedNotAppliedReason } from './notification.js';

/** Whose view: a tenant, in one mode (a partner's credential) or both (operators). */
export interface ViewScope {
  tenantId: string;
  mode?: Mode;
}

export interface PaymentRequestSummary {
  invoice: InvoiceRow;
  deliveries: PaymentDeliveryRow[];
}

/**
 * What an attempt sent, as recorded: the URL, the headers a partner verifies with (the signature
 * itself, one per active secret, is not kept) and the body exactly as signed.
 */
export interface SentRequest {
  attempt: number;
  url: string;
  webhookId: string;
  webhookTimestamp: number;
  body: string;
}

/** What `delivery` sent; null when nothing was (see its error), or for an attempt made before requests were kept. */
export function requestSent(delivery: PaymentDeliveryRow): SentRequest | null {
  const { attempt, requestUrl: url, webhookTimestamp, requestBody: body } = delivery;
  if (url === null || webhookTimestamp === null || body === null) return null;
  return { attempt, url, webhookId: paymentMessageId(delivery.invoiceId), webhookTimestamp, body };
}

/** What the last attempt that sent the request sent; null before any has. */
export const lastRequestSent = (deliveries: PaymentDeliveryRow[]): SentRequest | null =>
  deliveries.reduce<SentRequest | null>((last, delivery) => requestSent(delivery) ?? last, null);

const inScope = (scope: ViewScope) =>
  and(eq(invoices.tenantId, scope.tenantId), scope.mode ? eq(invoices.mode, scope.mode) : undefined);

async function deliveriesOf(db: Executor, invoiceIds: string[]): Promise<Map<string, PaymentDeliveryRow[]>> {
  const byInvoice = new Map(invoiceIds.map((id): [string, PaymentDeliveryRow[]] => [id, []]));
  if (invoiceIds.length === 0) return byInvoice;
  const rows = await db
    .select()
    .from(paymentDeliveries)
    .where(inArray(paymentDeliveries.invoiceId, invoiceIds))
    .orderBy(asc(paymentDeliveries.attempt), asc(paymentDeliveries.attemptedAt));
  for (const row of rows) byInvoice.get(row.invoiceId)?.push(row);
  return byInvoice;
}

/**
 * The scope's invoices, newest first, one page, each with its attempts, read in one snapshot: an
 * attempt and the `payment_url` it stored are never shown apart.
 */
export function listPaymentRequests(
  db: Database,
  scope: ViewScope,
  filter: { status?: string },
  page: Page,
): Promise<{ count: number; rows: PaymentRequestSummary[] }> {
  const where = and(inScope(scope), filter.status ? eq(invoices.status, filter.status) : undefined);
  return readInOneSnapshot(db, async (tx) => {
    const [counted] = await tx.select({ count: count() }).from(invoices).where(where);
    const found = await tx
      .select()
      .from(invoices)
      .where(where)
      .orderBy(desc(invoices.createdAt), desc(invoices.id))
      .limit(page.limit)
      .offset(page.offset);
    const deliveries = await deliveriesOf(
      tx,
      found.map((invoice) => invoice.id),
    );
    return {
      count: counted.count,
      rows: found.map((invoice) => ({ invoice, deliveries: deliveries.get(invoice.id) ?? [] })),
    };
  });
}

/** One of the scope's invoices with its attempts, in one snapshot; a 404 for any other id. */
export function getPaymentRequest(db: Database, scope: ViewScope, invoiceId: string): Promise<PaymentRequestSummary> {
  return readInOneSnapshot(db, async (tx) => {
    const [invoice] = await tx
      .select()
      .from(invoices)
      .where(and(inScope(scope), eq(invoices.id, invoiceId)));
    if (!invoice) throw notFound('Payment request');
    const deliveries = await deliveriesOf(tx, [invoice.id]);
    return { invoice, deliveries: deliveries.get(invoice.id) ?? [] };
  });
}

export const NOTIFICATION_LOG_OUTCOMES = ['accepted', 'refused'] as const;
export type NotificationLogOutcome = (typeof NOTIFICATION_LOG_OUTCOMES)[number];

/** One callback as recorded: an accepted (stored) notification or a refused one. */
export interface NotificationLogEntry {
  id: string;
  outcome: NotificationLogOutcome;
  mode: Mode;
  receivedAt: Date;
  invoiceId: string | null;
  /** What we answered: 200, or the refusal's status. */
  httpStatus: number;
  /** The refusal's message; null when accepted. */
  error: string | null;
  /** The notified status and transaction of an accepted one (a refused body may lack them). */
  status: string | null;
  transactionId: string | null;
  /** Whether an accepted one moved the invoice; null when refused. */
  applied: boolean | null;
  /** Why an accepted one did not move the invoice; null when it did, or when refused. */
  notAppliedReason: NotAppliedReason | null;
  /** The same for people to read (e.g. "unknown status, not applied"). */
  note: string | null;
  requestId: string | null;
  /** The body as received (a refused one's cut at REFUSED_PAYLOAD_MAX_BYTES). */
  payload: string | null;
  payloadTruncated: boolean;
}

interface LogRow {
  id: string;
  outcome: NotificationLogOutcome;
  mode: Mode;
  received_ms: string;
  invoice_id: string | null;
  http_status: number;
  error: string | null;
  status: string | null;
  transaction_id: string | null;
  applied: boolean | null;
  not_applied_reason: string | null;
  request_id: string | null;
  payload: string | null;
  payload_truncated: boolean;
}

/** Why an accepted callback did not move its invoice, as a code and in words; nulls when it did, or for a refused one. */
function notApplied(row: LogRow): Pick<NotificationLogEntry, 'notAppliedReason' | 'note'> {
  const reason =
    row.outcome === 'accepted' && row.status !== null && row.applied !== null
      ? storedNotAppliedReason({ status: row.status, applied: row.applied, notAppliedReason: row.not_applied_reason })
      : null;
  return { notAppliedReason: reason, note: reason && NOT_APPLIED_NOTES[reason] };
}

/**
 * The scope's accepted callbacks ($1 tenant, $2 mode or null, $3 invoice or null), with every column
 * named as in the refused ones: either may be the whole union.
 */
const ACCEPTED = `select e.id, 'accepted' as outcome, i.mode, e.received_at, e.invoice_id, 200 as http_status,
    null::text as error, e.status, e.transaction_id, e.applied, e.not_applied_reason, e.request_id,
    e.payload::text as payload,
    false as payload_truncated
  from payment_events e join invoices i on i.id = e.invoice_id
  where e.tenant_id = $1 and ($2::text is null or i.mode = $2)
    and ($3::uuid is null or e.invoice_id = $3::uuid)`;
/** The scope's refused callbacks, with the same parameters. */
const REFUSED = `select r.id, 'refused' as outcome, r.mode, r.received_at, r.invoice_id, r.http_status, r.error,
    null::text as status, null::text as transaction_id, null::boolean as applied, null::text as not_applied_reason,
    r.request_id, r.payload,
    r.payload_truncated
  from refused_notifications r
  where r.tenant_id = $1 and ($2::text is null or r.mode = $2)
    and ($3::uuid is null or r.invoice_id = $3::uuid)`;

type LogScope = [tenantId: string, mode: Mode | null, invoiceId: string | null];

/** The count and one page ($4 limit, $5 offset), newest first, of the callbacks `union` picks. */
const logStatements = (union: string) => ({
  count: statement<LogScope, { count: string }>(`select count(*) as count from (${union}) log`),
  page: statement<[...LogScope, limit: number, offset: number], LogRow>(
    `select log.*, extract(epoch from log.received_at) * 1000 as received_ms from (${union}) log
      order by log.received_at desc, log.id desc limit $4 offset $5`,
  ),
});

const NOTIFICATION_LOG = {
  accepted: logStatements(ACCEPTED),
  refused: logStatements(REFUSED),
  all: logStatements(`${ACCEPTED} union all ${REFUSED}`),
};

/** Which callbacks: of one kind (`outcome`), about one invoice. */
export interface NotificationLogFilter {
  outcome?: NotificationLogOutcome;
  invoiceId?: string;
}

/** The scope's callbacks as recorded, newest first, one page, as `filter` keeps them. */
export async function listNotificationLog(
  db: Executor,
  scope: ViewScope,
  { outcome, invoiceId }: NotificationLogFilter,
  page: Page,
): Promise<{ count: number; rows: NotificationLogEntry[] }> {
  const log = NOTIFICATION_LOG[outcome ?? 'all'];
  const params = [scope.tenantId, scope.mode ?? null, invoiceId ?? null] as const;
  const run = runIn(db);
  const [counted] = await run(log.count, params);
  const rows = await run(log.page, [...params, page.limit, page.offset]);
  return {
    count: Number(counted.count),
    rows: rows.map((row) => ({
      id: row.id,
      outcome: row.outcome,
      mode: row.mode,
      receivedAt: new Date(Number(row.received_ms)),
      invoiceId: row.invoice_id,
      httpStatus: Number(row.http_status),
      error: row.error,
      status: row.status,
      transactionId: row.transaction_id,
      applied: row.applied,
      ...notApplied(row),
      requestId: row.request_id,
      payload: row.payload,
      payloadTruncated: row.payload_truncated,
    })),
  };
}

/** When the scope's payment endpoint last took a payment request (a 2xx answer); null: never. */
export async function lastDeliveredAt(db: Executor, scope: ViewScope): Promise<Date | null> {
  const [row] = await db
    .select({ at: max(paymentDeliveries.attemptedAt) })
    .from(paymentDeliveries)
    .innerJoin(invoices, eq(invoices.id, paymentDeliveries.invoiceId))
    .where(
      and(
        inScope(scope),
        isNull(paymentDeliveries.error),
        gte(paymentDeliveries.httpStatus, 200),
        lt(paymentDeliveries.httpStatus, 300),
      ),
    );
  return row?.at ?? null;
}
