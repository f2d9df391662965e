/**
 * The pure checks of the payment callback (DECISIONS §4): the body's schema (steps 2 and 3), the
 * amount comparison (step 7) and the forward-only status transition. callback.ts runs them, in order.
 */
import { Kind, type Static, type TSchema, Type, TypeRegistry } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { isLosslessNumber, type LosslessNumber } from 'lossless-json';
import { AppError, ErrorCode, invalidField, missingField } from '../errors.js';
import { hasUnstorableCharacters, isUuid, unacceptableString } from '../text.js';
import { decimalEquals, formatAmount, parseDecimal, parseJsonNumber } from './money.js';

/**
 * The longest text a callback field may hold: transaction ids, statuses and gateways are short
 * references, and the deduplication index could not hold a long one.
 */
const FIELD_MAX_CHARACTERS = 255;

/** A JSON number as the callback's parser reads it (src/http/json-body.ts): a LosslessNumber, documented as a number. */
const LOSSLESS_NUMBER = 'LosslessNumber';
TypeRegistry.Set(LOSSLESS_NUMBER, (_schema, value) => isLosslessNumber(value));
const JsonNumber = Type.Unsafe<LosslessNumber>({ [Kind]: LOSSLESS_NUMBER, type: 'number' });

const Text = (description: string) => Type.String({ maxLength: FIELD_MAX_CHARACTERS, description });

/**
 * The callback's body (DECISIONS §4): what the route documents and what notificationBodyRefusal
 * checks, field by field in this order. Strings are counted in UTF-16 units, as in JavaScript.
 */
export const NotificationBody = Type.Object(
  {
    invoice_id: Text('The invoice this payment is for: its id, a UUID (anything else is `Invoice not found`)'),
    transaction_id: Text('Partner transaction reference or gateway transaction id; stable across retries'),
    status: Text('`paid`, `failed`, `cancelled` or `refunded`; other values are stored without a transition'),
    amount: Type.Union([Type.String({ maxLength: FIELD_MAX_CHARACTERS }), JsonNumber], {
      description: 'Must equal the invoice amount as an exact decimal (`"100.1"`, `100.10` and `"100.10"` are equal)',
    }),
    currency: Text('Must equal the invoice currency exactly'),
    gateway: Text("Must equal the tenant's configured gateway"),
  },
  {
    additionalProperties: true,
    description:
      'Each field in this order is checked for presence (absent, null or `""` is `Missing <field>`), then ' +
      'type (`Invalid <field>`). Extra fields (e.g. a nested object of gateway data) are stored with the ' +
      'event and otherwise ignored.',
    examples: [
      {
        invoice_id: '3f1c2b9e-8d4a-4c6f-9b2e-7a5d1e0c4b8a',
        transaction_id: 'chg_TS02A5720231433Qs1w0809820',
        status: 'paid',
        amount: '100.00',
        currency: 'SAR',
        gateway: 'tap',
      },
    ],
  },
);
export type NotificationBody = Static<typeof NotificationBody>;

/** The body's fields in the order they are checked; the first failure answers. */
export const REQUIRED_FIELDS = Object.keys(NotificationBody.properties) as (keyof NotificationBody)[];
const FIELD_CHECKS = REQUIRED_FIELDS.map((field) => ({
  field,
  check: TypeCompiler.Compile(NotificationBody.properties[field] as TSchema),
}));

export interface PaymentNotification {
  invoiceId: string;
  transactionId: string;
  status: string;
  /** A string amount as given, or a JSON number's exact value as plain decimal text. */
  amountText: string;
  currency: string;
  gateway: string;
}

/** Each refusal of steps 2 and 3. */
export const BODY_REFUSALS = {
  invalidJson: () => new AppError(ErrorCode.INVALID_JSON),
  missing: (field: string) => missingField(field),
  invalid: (field: string) => invalidField(field, 'is not of its type'),
};

/**
 * Steps 2 and 3 of DECISIONS §4 for a body parsed with `config: { losslessJsonNumbers: true }`
 * (src/http/json-body.ts): the refusal of the first failing check, or null for a NotificationBody.
 *
 * Each field of NotificationBody in turn is checked for presence then against its schema, so
 * `{"invoice_id": 5}` answers `Invalid invoice_id` before anything about the later fields.
 * "Missing" means absent, null or exactly "" (whitespace is present; it then fails as an unknown
 * invoice, status, currency or gateway, or as an amount mismatch). A string with NUL or an unpaired
 * surrogate is invalid too. A string among the extra fields (key or value, at any depth) that
 * PostgreSQL cannot store (NUL, an unpaired surrogate: src/text.ts) makes the body invalid JSON,
 * once the fields have passed. Extra fields are stored in full (spec 4.6): their strings may be as
 * long as the body allows, where other requests' strings stop at 4,096 characters.
 */
export function notificationBodyRefusal(body: unknown): AppError | null {
  if (!isJsonObject(body)) return BODY_REFUSALS.invalidJson();
  for (const { field, check } of FIELD_CHECKS) {
    const value = body[field];
    if (value === undefined || value === null || value === '') return BODY_REFUSALS.missing(field);
    if (typeof value === 'number') {
      // A JS number has already lost the sent digits: the route was registered without the flag.
      throw new TypeError(`${field} is a JS number: parse the callback body with losslessJsonNumbers`);
    }
    if (!check.Check(value) || (typeof value === 'string' && hasUnstorableCharacters(value))) {
      return BODY_REFUSALS.invalid(field);
    }
  }
  const extra = Object.entries(body).filter(([key]) => !(REQUIRED_FIELDS as string[]).includes(key));
  if (unacceptableString(Object.fromEntries(extra), 'body', Number.POSITIVE_INFINITY))
    return BODY_REFUSALS.invalidJson();
  return null;
}

/** The notification a checked body (notificationBodyRefusal found nothing) carries. */
export function readNotification(body: NotificationBody): PaymentNotification {
  return {
    invoiceId: body.invoice_id,
    transactionId: body.transaction_id,
    status: body.status,
    amountText: typeof body.amount === 'string' ? body.amount : jsonNumberText(body.amount),
    currency: body.currency,
    gateway: body.gateway,
  };
}

/** Steps 2 and 3: the notification `body` carries; throws the first check's refusal. */
export function parseNotification(body: unknown): PaymentNotification {
  const refusal = notificationBodyRefusal(body);
  if (refusal) throw refusal;
  return readNotification(body as NotificationBody);
}

function isJsonObject(value: unknown): value is Record<string, unknown> {
  // Excludes arrays and LosslessNumber, which are objects too.
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
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
