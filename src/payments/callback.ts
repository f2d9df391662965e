// The payment callback (spec 4.6, 7.3; DECISIONS §4), without HTTP: who is calling (step 1, the
// credential from the cache), then the notification's checks in order (steps 2-8) and the storing
// of the event with the forward-only move of invoice and trip (steps 9-10), the database part of
// which is one statement: one round trip in the common case. Results say why, the integrations
// host says it in HTTP.
import type { Caches } from '../cache.js';
import type { Executor } from '../db/client.js';
import { sqlState } from '../db/errors.js';
import { type Mode, resolvePartnerApiKey, type TenantCredential, type TenantRow } from '../tenants/index.js';
import type { TripStatus } from '../trips/index.js';
import { decimalText } from './money.js';
import {
  amountMatches,
  type BodyRejection,
  INVOICE_STATUSES,
  type InvoiceStatus,
  isKnownStatus,
  isUuid,
  type PaymentNotification,
  parseNotification,
  planTransition,
} from './notification.js';
import type { NotificationStore, ReceivedRow } from './notification-store.js';

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
  /** `unknownStatus`: stored, but its status is not one of the four, so nothing moved. */
  | { accepted: 'success' | 'duplicate'; rejected?: undefined; unknownStatus?: boolean }
  /** `invoiceId`: the refused notification's invoice, when it named one of this tenant in this mode. */
  | { accepted?: undefined; rejected: CallbackRejection; invoiceId?: string };

const rejected = (rejection: CallbackRejection, invoiceId?: string): CallbackResult => ({
  rejected: rejection,
  invoiceId,
});
const DUPLICATE: CallbackResult = { accepted: 'duplicate' };
const SUCCESS: CallbackResult = { accepted: 'success' };
const SUCCESS_UNKNOWN_STATUS: CallbackResult = { accepted: 'success', unknownStatus: true };

/** Step 1: the tenant whose partner API key `X-API-KEY` carries, or why not. */
export async function authenticatePartner(
  db: Executor,
  caches: Caches,
  apiKey: string | undefined,
): Promise<(TenantCredential & { rejected?: undefined }) | { rejected: CallbackRejection }> {
  if (!apiKey) return { rejected: { reason: 'missing_api_key' } };
  const credential = await resolvePartnerApiKey(db, caches, apiKey);
  return credential ?? { rejected: { reason: 'unauthorized' } };
}

interface ReceivedNotification {
  tenant: TenantRow;
  /** The key's mode: only invoices of this mode exist for it. */
  mode: Mode;
  /** The body parsed with lossless numbers (src/http/json-body.ts), or undefined when there is none. */
  body: unknown;
  /** The body as JSON text with every number's digits as sent: what is stored as the payload. */
  payloadJson: string;
  requestId: string;
}

/** What a notification does from each status its invoice may be in when locked. */
interface PlannedMove {
  next: InvoiceStatus;
  applied: boolean;
  paid_at: boolean;
  /** The trip's new status, when the invoice moves into `paid` or `refunded`. */
  trip: TripStatus | null;
}

const TRIP_STATUS_AFTER: Partial<Record<InvoiceStatus, TripStatus>> = { paid: 'booked', refunded: 'cancelled' };

/**
 * planTransition from every status, for the statement to pick from once it holds the row lock (and
 * for the bench). A test invoice never moves its trip: trips are live data.
 */
export function plannedMoves(notified: string, mode: Mode = 'live'): Record<InvoiceStatus, PlannedMove> {
  const moves = {} as Record<InvoiceStatus, PlannedMove>;
  for (const before of INVOICE_STATUSES) {
    const plan = planTransition(before, notified);
    const moved = plan.applied && before !== plan.next;
    moves[before] = {
      next: plan.next,
      applied: plan.applied,
      paid_at: plan.setPaidAt,
      trip: moved && mode === 'live' ? (TRIP_STATUS_AFTER[plan.next] ?? null) : null,
    };
  }
  return moves;
}

/** The plans of the statuses partners send, serialised once per mode; any other status is planned per call. */
const KNOWN_PLANS = new Map(
  (['live', 'test'] as const).flatMap((mode) =>
    ['paid', 'failed', 'cancelled', 'refunded'].map((status) => [
      `${mode}:${status}`,
      JSON.stringify(plannedMoves(status, mode)),
    ]),
  ),
);

/**
 * Steps 4 to 10 in one call of receive_payment_notification (migrations/0005_…), in the store's next
 * statement (one round trip, shared with the callbacks that wait with this one):
 * the invoice and whether the tuple is known (one read, no lock, which answers duplicates and
 * refusals); and only when `store` and the invoice checks pass and the tuple is new, the row lock,
 * the event (`on conflict do nothing`: the unique index decides races) and the forward-only move
 * of invoice and trip, as plannedMoves says for the status read under the lock. No row when the
 * invoice does not exist.
 */
function receive(
  store: NotificationStore,
  received: ReceivedNotification,
  notification: PaymentNotification,
  stored: { amount: string; payloadJson: string } | null,
): Promise<ReceivedRow | undefined> {
  const { invoiceId, transactionId, status, gateway, currency } = notification;
  const plans = KNOWN_PLANS.get(`${received.mode}:${status}`) ?? JSON.stringify(plannedMoves(status, received.mode));
  return store.receive([
    received.tenant.id,
    invoiceId,
    transactionId,
    status,
    gateway,
    stored !== null,
    stored?.amount ?? null,
    currency,
    plans,
    stored?.payloadJson ?? null,
    received.requestId,
    received.mode,
  ]);
}

/** Steps 2 to 10 for an authenticated partner. */
export async function processNotification(
  store: NotificationStore,
  received: ReceivedNotification,
): Promise<CallbackResult> {
  const parsed = parseNotification(received.body);
  if (!parsed.ok) return rejected(parsed.rejection);
  const notification = parsed.notification;
  if (!isUuid(notification.invoiceId)) return rejected({ reason: 'invoice_not_found' });

  // Stored only when the checks that need no invoice pass: its gateway, an amount that is a decimal.
  const amount = notification.gateway === received.tenant.gateway ? decimalText(notification.amountText) : null;
  let row: ReceivedRow | undefined;
  try {
    row = await receive(
      store,
      received,
      notification,
      amount === null ? null : { amount, payloadJson: received.payloadJson },
    );
  } catch (error) {
    // A payload PostgreSQL's jsonb cannot hold (say 1e999999 in an extra field) fails the statement
    // whatever the checks say: read again without it, and refuse it only where it would be stored.
    if (!sqlState(error)?.startsWith('22')) throw error;
    row = await receive(store, received, notification, null);
    return checkInvoice(received, notification, row) ?? (row?.known ? DUPLICATE : rejected({ reason: 'invalid_json' }));
  }
  // Not stored with every check passed: the unique index found the tuple stored meanwhile (a race).
  const stored = isKnownStatus(notification.status) ? SUCCESS : SUCCESS_UNKNOWN_STATUS;
  return checkInvoice(received, notification, row) ?? (row?.stored ? stored : DUPLICATE);
}

/** Steps 4 to 8 in order, on the invoice as the statement read it: the first refusal, or null. */
function checkInvoice(
  received: ReceivedNotification,
  notification: PaymentNotification,
  invoice: ReceivedRow | undefined,
): CallbackResult | null {
  if (!invoice) return rejected({ reason: 'invoice_not_found' });
  if (invoice.tenant_id !== received.tenant.id) return rejected({ reason: 'forbidden' });
  const invoiceId = notification.invoiceId.toLowerCase();
  if (notification.gateway !== received.tenant.gateway) return rejected({ reason: 'gateway_mismatch' }, invoiceId);
  if (!amountMatches(notification.amountText, invoice.amount))
    return rejected({ reason: 'amount_mismatch' }, invoiceId);
  if (notification.currency !== invoice.currency) return rejected({ reason: 'currency_mismatch' }, invoiceId);
  if (invoice.known) return DUPLICATE;
  return null;
}
