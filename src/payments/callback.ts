// The payment callback's rule (spec 4.6, 7.3; DECISIONS §4), without HTTP: every check once, in
// DECISIONS §4's order, the first failure answering. Step 1, the key, is the host's authenticator
// (resolvePartnerApiKey, before the body is read); steps 2 and 3 are the body's schema, checked
// by notificationBodyRefusal (the route's validator); steps 4 to 10 are processNotification. The
// database reads what the checks need and stores what they accepted (notification-store.ts,
// migrations/0030_…): it decides nothing but what only it can, the row lock, one event per tuple,
// and picking under the lock the move planned here for the state it finds (forward only, a second
// payment flagged). A refusal is an AppError; the integrations host says it in the callback's words.
import { sqlState } from '../db/errors.js';
import { AppError, ErrorCode, mismatch } from '../errors.js';
import type { Mode, TenantRow } from '../tenants/index.js';
import { isUuid } from '../text.js';
import type { TripStatus } from '../trips/index.js';
import {
  amountMatches,
  INVOICE_STATUSES,
  type InvoiceStatus,
  type NotAppliedReason,
  type PaymentNotification,
  planTransition,
} from './notification.js';
import type { InvoiceState, NotificationStore, PlannedMove, StoreOutcome } from './notification-store.js';

/** An accepted notification; `notAppliedReason`: stored and answered success, but the invoice did not move, and why. */
export interface CallbackResult {
  accepted: 'success' | 'duplicate';
  notAppliedReason?: NotAppliedReason;
}

const DUPLICATE: CallbackResult = { accepted: 'duplicate' };
const SUCCESS: CallbackResult = { accepted: 'success' };

/** Each refusal of steps 4 to 8, in their order. */
export const CALLBACK_REFUSALS = {
  invoiceNotFound: () =>
    new AppError(ErrorCode.NOT_FOUND, 'Invoice not found.', [
      { field: 'invoice_id', message: 'names no invoice of this key', location: 'body' },
    ]),
  forbidden: () => new AppError(ErrorCode.FORBIDDEN, 'The invoice is not yours.'),
  gatewayMismatch: () => mismatch('gateway', "is not the tenant's gateway"),
  amountMismatch: () => mismatch('amount', "is not the invoice's amount"),
  currencyMismatch: () => mismatch('currency', "is not the invoice's currency"),
};
const refused = CALLBACK_REFUSALS;

interface ReceivedNotification {
  tenant: TenantRow;
  /** The key's mode: only invoices of this mode exist for it. */
  mode: Mode;
  /** What the body carries, once checked (notificationBodyRefusal). */
  notification: PaymentNotification;
  /** The body as JSON text with every number's digits as sent: what is stored as the payload. */
  payloadJson: string;
  requestId: string;
}

const TRIP_STATUS_AFTER: Partial<Record<InvoiceStatus, TripStatus>> = { paid: 'booked', refunded: 'cancelled' };

/**
 * planTransition from every state the invoice may be in, for the statement to pick from once it
 * holds the row lock (and for the bench). An invoice's trip is of the invoice's own mode
 * (invoices.ts), so a test invoice moves its test trip as a live one moves its live trip.
 */
export function plannedMoves(notified: string): Record<InvoiceState, PlannedMove> {
  const moves = {} as Record<InvoiceState, PlannedMove>;
  for (const before of INVOICE_STATUSES) {
    for (const byThisTransaction of [false, true]) {
      const plan = planTransition(before, notified, byThisTransaction);
      const moved = plan.applied && before !== plan.next;
      const state: InvoiceState = byThisTransaction ? `${before}/this_transaction` : before;
      moves[state] = {
        next: plan.next,
        applied: plan.applied,
        paid_at: plan.setPaidAt,
        trip: moved ? (TRIP_STATUS_AFTER[plan.next] ?? null) : null,
        not_applied_reason: plan.notAppliedReason,
        possible_double_charge: plan.notAppliedReason === 'possible_double_charge',
      };
    }
  }
  return moves;
}

/** The moves of the statuses partners send, made once; any other status is planned per call. */
const KNOWN_MOVES = new Map(
  ['paid', 'failed', 'cancelled', 'refunded'].map((status) => [status, plannedMoves(status)]),
);

/** Steps 4 to 10 for an authenticated partner: the result, or the AppError of the first failing check. */
export async function processNotification(
  store: NotificationStore,
  received: ReceivedNotification,
): Promise<CallbackResult> {
  const { tenant, mode } = received;
  const { invoiceId, transactionId, status, amountText, currency, gateway } = received.notification;
  // Step 4: an invoice with this id, in the key's mode.
  if (!isUuid(invoiceId)) throw refused.invoiceNotFound();
  const lookup = { tenant: tenant.id, invoice_id: invoiceId, mode, transaction_id: transactionId, status, gateway };
  const invoice = await store.read(lookup);
  if (!invoice) throw refused.invoiceNotFound();
  // Step 5: the caller's own invoice.
  if (invoice.tenant_id !== tenant.id) throw refused.forbidden();
  // Step 6: the tenant's gateway.
  if (gateway !== tenant.gateway) throw refused.gatewayMismatch();
  // Step 7: the invoice's amount, as exact decimals.
  if (!amountMatches(amountText, invoice.amount)) throw refused.amountMismatch();
  // Step 8: the invoice's currency, exactly.
  if (currency !== invoice.currency) throw refused.currencyMismatch();
  // Step 9: a tuple this tenant sent before, in this mode (test and live never touch).
  if (invoice.known) return DUPLICATE;
  // Step 10: stored, with the move of invoice and trip planned for the state the statement finds.
  let outcome: StoreOutcome;
  try {
    outcome = await store.store({
      ...lookup,
      moves: KNOWN_MOVES.get(status) ?? plannedMoves(status),
      payload: received.payloadJson,
      request_id: received.requestId,
    });
  } catch (error) {
    // A payload PostgreSQL's jsonb cannot hold (say 1e999999 in an extra field), refused where it
    // would be stored.
    if (!sqlState(error)?.startsWith('22')) throw error;
    throw new AppError(ErrorCode.INVALID_JSON);
  }
  // The unique index found the tuple stored since it was read (a race), or the invoice went since.
  if (!outcome.stored) {
    if (outcome.why === 'stored_before') return DUPLICATE;
    throw refused.invoiceNotFound();
  }
  return outcome.notAppliedReason === null
    ? SUCCESS
    : { accepted: 'success', notAppliedReason: outcome.notAppliedReason };
}
