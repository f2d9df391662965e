/**
 * The pure checks of the payment callback (DECISIONS §4): the body's shape (steps 2 and 3), the
 * amount comparison (step 7) and the forward-only status transition. callback.ts runs them, in order.
 */
import { isLosslessNumber, type LosslessNumber } from 'lossless-json';
import { hasUnstorableCharacters, isUuid, unacceptableString } from '../text.js';
import { decimalEquals, formatAmount, parseDecimal, parseJsonNumber } from './money.js';

/**
 * The longest text a callback field may hold: transaction ids, statuses and gateways are short
 * references, and the deduplication index could not hold a long one.
 */
const FIELD_MAX_CHARACTERS = 255;

/** Whether a string field is short enough and storable as sent (two ids never stored as one). */
function isStorableField(text: string): boolean {
  return text.length <= FIELD_MAX_CHARACTERS && !hasUnstorableCharacters(text);
}

/** Required fields in the order they are checked; the first failure answers. */
export const REQUIRED_FIELDS = ['invoice_id', 'transaction_id', 'status', 'amount', 'currency', 'gateway'] as const;

type NotificationField = (typeof REQUIRED_FIELDS)[number];

export interface PaymentNotification {
  invoiceId: string;
  transactionId: string;
  status: string;
  /** A string amount as given, or a JSON number's exact value as plain decimal text. */
  amountText: string;
  currency: string;
  gateway: string;
}

/** Why a body is not a notification: the first failing check of steps 2 and 3. */
export type BodyRejection =
  | { reason: 'invalid_json' }
  | { reason: 'missing_field'; field: NotificationField }
  | { reason: 'invalid_field'; field: NotificationField };

type ParsedNotification = { ok: true; notification: PaymentNotification } | { ok: false; rejection: BodyRejection };

/**
 * Reads a callback body parsed with `config: { losslessJsonNumbers: true }` (src/http/json-body.ts).
 *
 * Each field in turn, in REQUIRED_FIELDS order, is checked for presence then type, so
 * `{"invoice_id": 5}` answers `Invalid invoice_id` before anything about the later fields.
 * "Missing" means absent, null or exactly "" (whitespace is present; it then fails as an unknown
 * invoice, status, currency or gateway, or as an amount mismatch). Every field is a string, except
 * `amount`, which may also be a JSON number. A string longer than FIELD_MAX_CHARACTERS, or with NUL
 * or an unpaired surrogate, is invalid. Extra fields are stored with the event and otherwise
 * ignored; a string among them (key or value, at any depth) that no request may carry (NUL, an
 * unpaired surrogate, over 4,096 characters: src/text.ts) makes the body invalid JSON, once the
 * fields have passed.
 */
export function parseNotification(body: unknown): ParsedNotification {
  if (!isJsonObject(body)) return reject({ reason: 'invalid_json' });
  for (const field of REQUIRED_FIELDS) {
    const value = body[field];
    if (value === undefined || value === null || value === '') return reject({ reason: 'missing_field', field });
    if (field === 'amount' && typeof value === 'number') {
      // A JS number has already lost the sent digits: the route was registered without the flag.
      throw new TypeError('amount is a JS number: parse the callback body with losslessJsonNumbers');
    }
    if (typeof value === 'string' ? !isStorableField(value) : !(field === 'amount' && isLosslessNumber(value))) {
      return reject({ reason: 'invalid_field', field });
    }
  }
  const extra = Object.entries(body).filter(([key]) => !(REQUIRED_FIELDS as readonly string[]).includes(key));
  if (unacceptableString(Object.fromEntries(extra), 'body')) return reject({ reason: 'invalid_json' });
  const fields = body as Record<Exclude<NotificationField, 'amount'>, string> & { amount: string | LosslessNumber };
  return {
    ok: true,
    notification: {
      invoiceId: fields.invoice_id,
      transactionId: fields.transaction_id,
      status: fields.status,
      amountText: typeof fields.amount === 'string' ? fields.amount : jsonNumberText(fields.amount),
      currency: fields.currency,
      gateway: fields.gateway,
    },
  };
}

function isJsonObject(value: unknown): value is Record<string, unknown> {
  // Excludes arrays and LosslessNumber, which are objects too.
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

function reject(rejection: BodyRejection): ParsedNotification {
  return { ok: false, rejection };
}

/**
 * A JSON number as plain decimal text, so the number `1e2` compares as 100 (the string "1e2" is not
 * a decimal and never matches). A number too long to read keeps its source text: never a match.
 */
function jsonNumberText(amount: LosslessNumber): string {
  const value = parseJsonNumber(amount.value);
  return value === null ? amount.value : formatAmount(value, value.scale);
}

/**
 * The invoice a callback body names, whatever check refused it: its `invoice_id` when that is a
 * UUID (lower-case, as stored), else null. Whose invoice it is, the refusal's record checks.
 */
export function namedInvoiceId(body: unknown): string | null {
  const named = isJsonObject(body) ? body.invoice_id : undefined;
  return typeof named === 'string' && isUuid(named) ? named.toLowerCase() : null;
}

/**
 * Step 7: the notified amount equals the invoice amount as exact decimals ("100.0", "100" and
 * "100.00" all equal 100.00). Text that is not a plain decimal is a mismatch, never an exception.
 */
export function amountMatches(amountText: string, invoiceAmount: string): boolean {
  const notified = parseDecimal(amountText);
  const invoiced = parseDecimal(invoiceAmount);
  return notified !== null && invoiced !== null && decimalEquals(notified, invoiced);
}

export type InvoiceStatus = 'pending' | 'failed' | 'paid' | 'refunded';

/** Statuses only move forward along this order (DECISIONS §4). */
const STATUS_ORDER: Readonly<Record<InvoiceStatus, number>> = { pending: 0, failed: 1, paid: 2, refunded: 3 };
export const INVOICE_STATUSES = Object.keys(STATUS_ORDER) as InvoiceStatus[];

/** Notified status → invoice status (spec 3.1). Case-sensitive: "PAID" is an unknown status. */
const MAPPED_STATUS: ReadonlyMap<string, InvoiceStatus> = new Map([
  ['paid', 'paid'],
  ['failed', 'failed'],
  ['cancelled', 'failed'],
  ['refunded', 'refunded'],
]);

/** Whether a notified status is one of the four the invoice follows; any other is stored, never applied. */
export function isKnownStatus(notified: string): boolean {
  return MAPPED_STATUS.has(notified);
}

/** Why a stored notification did not move its invoice: stored with the event, shown to operators and the partner. */
export const NOT_APPLIED_REASONS = ['unknown_status', 'status_behind', 'possible_double_charge'] as const;
export type NotAppliedReason = (typeof NOT_APPLIED_REASONS)[number];

/** Each reason for people to read (the console, the partner's `note`). */
export const NOT_APPLIED_NOTES: Readonly<Record<NotAppliedReason, string>> = {
  unknown_status: 'unknown status, not applied',
  status_behind: "behind the invoice's status, not applied",
  possible_double_charge:
    'possible double charge: the invoice was already paid under another transaction_id, not applied',
};

/**
 * A stored event's reason; null when applied. Events stored by release 1.0.0 carry none: theirs
 * follows from their status (it flagged no second payment).
 */
export function storedNotAppliedReason(event: {
  status: string;
  applied: boolean;
  notAppliedReason: string | null;
}): NotAppliedReason | null {
  if (event.applied) return null;
  return (
    NOT_APPLIED_REASONS.find((reason) => reason === event.notAppliedReason) ??
    (isKnownStatus(event.status) ? 'status_behind' : 'unknown_status')
  );
}

export interface TransitionPlan {
  /** The invoice's status after the event (the current one when not applied). */
  next: InvoiceStatus;
  /** Whether the event changes the invoice; recorded on the stored event either way. */
  applied: boolean;
  /** Set paid_at to the time of this event. */
  setPaidAt: boolean;
  /** Why not applied; null when applied. */
  notAppliedReason: NotAppliedReason | null;
}

const notApplied = (current: InvoiceStatus, reason: NotAppliedReason): TransitionPlan => ({
  next: current,
  applied: false,
  setPaidAt: false,
  notAppliedReason: reason,
});

/**
 * What an accepted, non-duplicate notification does to the invoice, which it finds in `current`,
 * last moved by this notification's transaction or not (`byThisTransaction`: its gateway_reference
 * is this transaction_id). An unknown status, or one behind the current status (a late `failed`
 * after `paid`), changes nothing. A `paid` for an invoice already paid under another transaction is
 * a possible double charge (DECISIONS §11): stored, not applied, so gateway_reference and paid_at
 * keep the first payment's, and the invoice is flagged for the operators. Otherwise the same status
 * again is applied, so gateway_reference follows the newest transaction: DECISIONS states it for
 * `failed` over `failed`, and `refunded` over `refunded` gets the same rule.
 */
export function planTransition(current: InvoiceStatus, notified: string, byThisTransaction: boolean): TransitionPlan {
  const mappedStatus = MAPPED_STATUS.get(notified) ?? null;
  if (mappedStatus === null) return notApplied(current, 'unknown_status');
  if (STATUS_ORDER[mappedStatus] < STATUS_ORDER[current]) return notApplied(current, 'status_behind');
  if (mappedStatus === 'paid' && current === 'paid' && !byThisTransaction) {
    return notApplied(current, 'possible_double_charge');
  }
  return {
    next: mappedStatus,
    applied: true,
    setPaidAt: mappedStatus === 'paid' && current !== 'paid',
    notAppliedReason: null,
  };
}
