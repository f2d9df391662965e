// The payment callback (spec 4.6, 7.3; DECISIONS §4), without HTTP: who is calling (step 1), then
// the notification's checks in order (steps 2-8), then the one transaction that stores the event
// and moves the invoice and its trip (steps 9-10). Outcomes carry the HTTP status and exact body.
import { and, eq, sql } from 'drizzle-orm';
import type { Database, Executor } from '../db/client.js';
import { sqlState } from '../db/errors.js';
import { invoices, paymentEvents } from '../db/schema.js';
import { resolvePartnerApiKey } from '../tenants/credentials.js';
import type { TenantRow } from '../tenants/tenants.js';
import { setTripStatus } from '../trips/status.js';
import { amountMatches, type InvoiceStatus, isUuid, parseNotification, planTransition } from './notification.js';

export type CallbackErrorMessage =
  | 'Missing API key'
  | 'Unauthorized'
  | 'Invalid JSON body'
  | `Missing ${string}`
  | `Invalid ${string}`
  | 'Invoice not found'
  | 'Forbidden'
  | 'Gateway mismatch'
  | 'Amount mismatch'
  | 'Currency mismatch';

export type CallbackOutcome =
  | { httpStatus: 200; body: { status: 'success' | 'duplicate' } }
  | { httpStatus: 400 | 401 | 403 | 404; body: { error: CallbackErrorMessage } };

const rejected = (httpStatus: 400 | 401 | 403 | 404, error: CallbackErrorMessage): CallbackOutcome => ({
  httpStatus,
  body: { error },
});

/** Step 1: the tenant whose partner API key `X-API-KEY` carries, or the 401 to answer. */
export async function authenticatePartner(
  db: Executor,
  apiKey: string | undefined,
): Promise<{ tenant: TenantRow } | { outcome: CallbackOutcome }> {
  if (!apiKey) return { outcome: rejected(401, 'Missing API key') };
  const tenant = await resolvePartnerApiKey(db, apiKey);
  return tenant ? { tenant } : { outcome: rejected(401, 'Unauthorized') };
}

export interface ReceivedNotification {
  tenant: TenantRow;
  /** The body parsed with lossless numbers (src/http/json-body.ts), or undefined when there is none. */
  body: unknown;
  /** The body as JSON text with every number's digits as sent: what is stored as the payload. */
  payloadJson: string;
  requestId: string;
}

/** Whether a notification was accepted, and why not: for the log line of a rejected one. */
export interface ProcessedNotification {
  outcome: CallbackOutcome;
  /** Set when the event was stored: whether it moved the invoice. */
  applied?: boolean;
}

/** Steps 2 to 10 for an authenticated partner. */
export async function processNotification(
  db: Database,
  received: ReceivedNotification,
): Promise<ProcessedNotification> {
  const parsed = parseNotification(received.body);
  if (!parsed.ok) return { outcome: rejected(parsed.httpStatus, parsed.message) };
  const notification = parsed.notification;

  if (!isUuid(notification.invoiceId)) return { outcome: rejected(404, 'Invoice not found') };
  // The invoice, and whether this tuple was received before: a partner retrying (the common
  // repeat) is answered from this one query, without a transaction or a row lock.
  const alreadyReceived = db
    .select({ id: paymentEvents.id })
    .from(paymentEvents)
    .where(
      and(
        eq(paymentEvents.tenantId, received.tenant.id),
        eq(paymentEvents.transactionId, notification.transactionId),
        eq(paymentEvents.status, notification.status),
        eq(paymentEvents.gateway, notification.gateway),
      ),
    );
  const [invoice] = await db
    .select({
      tenantId: invoices.tenantId,
      amount: invoices.amount,
      currency: invoices.currency,
      known: sql<boolean>`exists (${alreadyReceived})`,
    })
    .from(invoices)
    .where(eq(invoices.id, notification.invoiceId));
  if (!invoice) return { outcome: rejected(404, 'Invoice not found') };
  if (invoice.tenantId !== received.tenant.id) return { outcome: rejected(403, 'Forbidden') };
  if (notification.gateway !== received.tenant.gateway) return { outcome: rejected(400, 'Gateway mismatch') };
  if (!amountMatches(notification.amountText, invoice.amount)) return { outcome: rejected(400, 'Amount mismatch') };
  if (notification.currency !== invoice.currency) return { outcome: rejected(400, 'Currency mismatch') };

  const duplicate: ProcessedNotification = { outcome: { httpStatus: 200, body: { status: 'duplicate' } } };
  if (invoice.known) return duplicate;

  try {
    return await db.transaction(async (tx) => {
      // The row lock serialises notifications for one invoice: each plans from the status the
      // previous one left, so concurrent `paid` and `failed` end `paid` in either order.
      const [current] = await tx
        .select({ status: invoices.status, tripId: invoices.tripId })
        .from(invoices)
        .where(eq(invoices.id, notification.invoiceId))
        .for('update');
      const before = current.status as InvoiceStatus;
      const plan = planTransition(before, notification.status);
      // The unique (tenant, transaction_id, status, gateway) index decides duplicates, races included.
      const [stored] = await tx
        .insert(paymentEvents)
        .values({
          tenantId: received.tenant.id,
          invoiceId: notification.invoiceId,
          transactionId: notification.transactionId,
          status: notification.status,
          gateway: notification.gateway,
          payload: sql`${received.payloadJson}::jsonb`,
          applied: plan.applied,
          statusBefore: before,
          statusAfter: plan.next,
          requestId: received.requestId,
        })
        .onConflictDoNothing()
        .returning({ id: paymentEvents.id });
      if (!stored) return duplicate;
      if (plan.applied) {
        await tx
          .update(invoices)
          .set({
            status: plan.next,
            gatewayReference: notification.transactionId,
            ...(plan.setPaidAt && { paidAt: sql`now()` }),
            updatedAt: sql`now()`,
          })
          .where(eq(invoices.id, notification.invoiceId));
        const tripStatus = plan.next === 'paid' ? 'booked' : plan.next === 'refunded' ? 'cancelled' : null;
        if (current.tripId && tripStatus && before !== plan.next) await setTripStatus(tx, current.tripId, tripStatus);
      }
      return { outcome: { httpStatus: 200, body: { status: 'success' } }, applied: plan.applied };
    });
  } catch (error) {
    // A number PostgreSQL's jsonb cannot hold (say 1e999999 in an extra field): not storable JSON.
    if (sqlState(error)?.startsWith('22')) return { outcome: rejected(400, 'Invalid JSON body') };
    throw error;
  }
}
