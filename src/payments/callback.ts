// The payment callback (spec 4.6, 7.3; DECISIONS §4), without HTTP: who is calling (step 1), then
// the notification's checks in order (steps 2-8), then the one transaction that stores the event
// and moves the invoice and its trip (steps 9-10). Results say why, the integrations host says it in HTTP.
import { and, eq, sql } from 'drizzle-orm';
import type { Database, Executor } from '../db/client.js';
import { sqlState } from '../db/errors.js';
import { invoices, paymentEvents } from '../db/schema.js';
import { resolvePartnerApiKey, type TenantCredential } from '../tenants/credentials.js';
import type { TenantRow } from '../tenants/tenants.js';
import { setTripStatus } from '../trips/status.js';
import {
  amountMatches,
  type BodyRejection,
  type InvoiceStatus,
  isUuid,
  parseNotification,
  planTransition,
} from './notification.js';

/** Why a notification was refused: the first failing check, in the order of DECISIONS §4. */
export type CallbackRejection =
  | { reason: 'missing_api_key' }
  | { reason: 'unauthorized' }
  | BodyRejection
  | { reason: 'invoice_not_found' }
  | { reason: 'forbidden' }
  | { reason: 'gateway_mismatch' }
  | { reason: 'amount_mismatch' }
  | { reason: 'currency_mismatch' };

export type CallbackResult =
  | { accepted: 'success' | 'duplicate'; rejected?: undefined }
  | { accepted?: undefined; rejected: CallbackRejection };

const rejected = (rejection: CallbackRejection): CallbackResult => ({ rejected: rejection });
const DUPLICATE: CallbackResult = { accepted: 'duplicate' };
const SUCCESS: CallbackResult = { accepted: 'success' };

/** Step 1: the tenant whose partner API key `X-API-KEY` carries, or why not. */
export async function authenticatePartner(
  db: Executor,
  apiKey: string | undefined,
): Promise<(TenantCredential & { rejected?: undefined }) | { rejected: CallbackRejection }> {
  if (!apiKey) return { rejected: { reason: 'missing_api_key' } };
  const credential = await resolvePartnerApiKey(db, apiKey);
  return credential ?? { rejected: { reason: 'unauthorized' } };
}

interface ReceivedNotification {
  tenant: TenantRow;
  /** The body parsed with lossless numbers (src/http/json-body.ts), or undefined when there is none. */
  body: unknown;
  /** The body as JSON text with every number's digits as sent: what is stored as the payload. */
  payloadJson: string;
  requestId: string;
}

/** Steps 2 to 10 for an authenticated partner. */
export async function processNotification(db: Database, received: ReceivedNotification): Promise<CallbackResult> {
  const parsed = parseNotification(received.body);
  if (!parsed.ok) return rejected(parsed.rejection);
  const notification = parsed.notification;

  if (!isUuid(notification.invoiceId)) return rejected({ reason: 'invoice_not_found' });
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
  if (!invoice) return rejected({ reason: 'invoice_not_found' });
  if (invoice.tenantId !== received.tenant.id) return rejected({ reason: 'forbidden' });
  if (notification.gateway !== received.tenant.gateway) return rejected({ reason: 'gateway_mismatch' });
  if (!amountMatches(notification.amountText, invoice.amount)) return rejected({ reason: 'amount_mismatch' });
  if (notification.currency !== invoice.currency) return rejected({ reason: 'currency_mismatch' });
  if (invoice.known) return DUPLICATE;

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
      if (!stored) return DUPLICATE;
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
      return SUCCESS;
    });
  } catch (error) {
    // A number PostgreSQL's jsonb cannot hold (say 1e999999 in an extra field): not storable JSON.
    if (sqlState(error)?.startsWith('22')) return rejected({ reason: 'invalid_json' });
    throw error;
  }
}
