// The payment callback's rule (spec 4.6, 7.3; DECISIONS §4), without HTTP: every check once, in
// DECISIONS §4's order, the first failure answering. Step 1, the key, is the host's authenticator
// (resolvePartnerApiKey, before the body is read); steps 2 to 10 are processNotification. The
// database reads what the checks need and stores what they accepted (notification-store.ts,
// migrations/0017_…): it decides nothing but what only it can, the row lock, one event per tuple,
// and picking under the lock the move planned here for the state it finds (forward only, a second
// payment flagged). Results say why, the integrations host says it in HTTP.
import { sqlState } from '../db/errors.js';
import type { Mode, TenantRow } from '../tenants/index.js';
import { isUuid } from '../text.js';
import type { TripStatus } from '../trips/index.js';
import {
  amountMatches,
  type BodyRejection,
  INVOICE_STATUSES,
  type InvoiceStatus,
  type NotAppliedReason,
  parseNotification,
  planTransition,
} from './notification.js';
import type { InvoiceState, NotificationStore, PlannedMove, StoreOutcome } from './notification-store.js';

/** Why a notification was refused: the first failing check, in the order of DECISIONS §4. */
export type CallbackRejection =
  | BodyRejection
  | { reason: 'invoice_not_found' }
  | { reason: 'forbidden' }
  | { reason: 'gateway_mismatch' }
  | { reason: 'amount_mismatch' }
  | { reason: 'currency_mismatch' };

export type CallbackResult =
  /** `notAppliedReason`: stored and answered success, but the invoice did not move, and why. */
  | { accepted: 'success' | 'duplicate'; rejected?: undefined; notAppliedReason?: NotAppliedReason }
  | { accepted?: undefined; rejected: CallbackRejection; notAppliedReason?: undefined };

const rejected = (rejection: CallbackRejection): CallbackResult => ({ rejected: rejection });
const DUPLICATE: CallbackResult = { accepted: 'duplicate' };
const SUCCESS: CallbackResult = { accepted: 'success' };

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

/** Steps 2 to 10 for an authenticated partner. */
export async function processNotification(
  store: NotificationStore,
  received: ReceivedNotification,
): Promise<CallbackResult> {
  const { tenant, mode } = received;
  // Steps 2 and 3: a JSON object, then each required field present and of its type, in order.
  const parsed = parseNotification(received.body);
  if (!parsed.ok) return rejected(parsed.rejection);
  const { invoiceId, transactionId, status, amountText, currency, gateway } = parsed.notification;
  // Step 4: an invoice with this id, in the key's mode.
  if (!isUuid(invoiceId)) return rejected({ reason: 'invoice_not_found' });
  const lookup = { tenant: tenant.id, invoice_id: invoiceId, mode, transaction_id: transactionId, status, gateway };
  const invoice = await store.read(lookup);
  if (!invoice) return rejected({ reason: 'invoice_not_found' });
  // Step 5: the caller's own invoice.
  if (invoice.tenant_id !== tenant.id) return rejected({ reason: 'forbidden' });
  // Step 6: the tenant's gateway.
  if (gateway !== tenant.gateway) return rejected({ reason: 'gateway_mismatch' });
  // Step 7: the invoice's amount, as exact decimals.
  if (!amountMatches(amountText, invoice.amount)) return rejected({ reason: 'amount_mismatch' });
  // Step 8: the invoice's currency, exactly.
  if (currency !== invoice.currency) return rejected({ reason: 'currency_mismatch' });
  // Step 9: a tuple this tenant sent before.
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
    return rejected({ reason: 'invalid_json' });
  }
  // The unique index found the tuple stored since it was read (a race), or the invoice went since.
  if (!outcome.stored) return outcome.why === 'stored_before' ? DUPLICATE : rejected({ reason: 'invoice_not_found' });
  return outcome.notAppliedReason === null
    ? SUCCESS
    : { accepted: 'success', notAppliedReason: outcome.notAppliedReason };
}
