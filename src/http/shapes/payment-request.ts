// The payment conversation as both hosts show it: on the integrations host a partner's payment
// requests with every attempt and its callbacks as recorded; on both, a ping's outcome. Written once as TypeBox schemas, with the
// mapping from the domain's rows.
import { type Static, Type } from '@sinclair/typebox';
import {
  type BreakerEventRow,
  type BreakerRow,
  type EndpointPingRow,
  isSuccessStatus,
  NOT_APPLIED_NOTES,
  NOT_APPLIED_REASONS,
  NOTIFICATION_LOG_OUTCOMES,
  type NotAppliedReason,
  type NotificationLogEntry,
  type PaymentDeliveryRow,
  type PaymentRequestSummary,
  REFUSED_PAYLOAD_MAX_BYTES,
  RESPONSE_BODY_MAX_BYTES,
} from '../../payments/index.js';
import { EXAMPLE_UUID } from '../openapi.js';
import { isoOrNull, Nullable, Timestamp, Uuid } from '../schemas.js';

export const ModeSchema = Type.Unsafe<'live' | 'test'>({
  type: 'string',
  enum: ['live', 'test'],
  description: '`test` for data made with test credentials; each mode sees only its own',
});

/** An invoice amount as the admin API and test invoices take it. */
export const InvoiceAmount = Type.String({
  maxLength: 40,
  description: 'Decimal string, at most the currency\'s minor-unit places ("100.00" SAR, "12.500" KWD, "1500" JPY)',
});
export const CurrencyCode = Type.String({ pattern: '^[A-Z]{3}$', description: 'ISO 4217 code, upper case' });

const Attempt = Type.Object({
  attempt: Type.Integer({ minimum: 1 }),
  attempted_at: Timestamp,
  http_status: Nullable(
    Type.Integer({ description: 'What your endpoint answered; null when no answer came (network error, timeout)' }),
  ),
  latency_ms: Nullable(Type.Integer()),
  error: Nullable(Type.String({ description: 'null on success; "(final: not retried)" marks the last attempt' })),
  response_body: Nullable(
    Type.String({ description: `The start (${RESPONSE_BODY_MAX_BYTES} bytes) of your endpoint's reply` }),
  ),
  next_retry_at: Nullable(
    Type.String({ format: 'date-time', description: 'When the next attempt is due; null when none is planned' }),
  ),
});

export function attemptView(row: PaymentDeliveryRow): Static<typeof Attempt> {
  return {
    attempt: row.attempt,
    attempted_at: row.attemptedAt.toISOString(),
    http_status: row.httpStatus,
    latency_ms: row.latencyMs,
    error: row.error,
    response_body: row.responseBody,
    next_retry_at: isoOrNull(row.nextRetryAt),
  };
}

export const PaymentRequest = Type.Object(
  {
    invoice_id: Uuid,
    mode: ModeSchema,
    amount: Type.String({ description: "Decimal string with the currency's minor-unit places" }),
    currency: Type.String({ description: 'ISO 4217 code' }),
    status: Type.String({ description: '`pending`, then `failed`, `paid` or `refunded` (forward only)' }),
    trip_id: Nullable(Uuid),
    payment_url: Nullable(Type.String({ description: 'From your reply to the payment request' })),
    gateway_reference: Nullable(Type.String({ description: 'transaction_id of the last applied callback' })),
    paid_at: Nullable(Timestamp),
    created_at: Timestamp,
    next_retry_at: Nullable(
      Type.String({
        format: 'date-time',
        description:
          'When we call your endpoint again; null when delivered, given up, not yet attempted, or once you have reported an outcome',
      }),
    ),
    attempts: Type.Array(Attempt, { description: 'Every call of your payment endpoint for this invoice, in order' }),
  },
  {
    $id: 'PaymentRequest',
    title: 'Payment request',
    examples: [
      {
        invoice_id: EXAMPLE_UUID,
        mode: 'test',
        amount: '100.00',
        currency: 'SAR',
        status: 'pending',
        trip_id: null,
        payment_url: null,
        gateway_reference: null,
        paid_at: null,
        created_at: '2026-01-15T09:30:00.000Z',
        next_retry_at: '2026-01-15T09:30:45.000Z',
        attempts: [
          {
            attempt: 1,
            attempted_at: '2026-01-15T09:30:00.120Z',
            http_status: 503,
            latency_ms: 87,
            error: 'endpoint answered HTTP 503',
            response_body: 'upstream unavailable',
            next_retry_at: '2026-01-15T09:30:45.000Z',
          },
        ],
      },
    ],
  },
);

export function paymentRequestView({ invoice, deliveries }: PaymentRequestSummary): Static<typeof PaymentRequest> {
  const last = deliveries.at(-1);
  return {
    invoice_id: invoice.id,
    mode: invoice.mode,
    amount: invoice.amount,
    currency: invoice.currency,
    status: invoice.status,
    trip_id: invoice.tripId,
    payment_url: invoice.paymentUrl,
    gateway_reference: invoice.gatewayReference,
    paid_at: isoOrNull(invoice.paidAt),
    created_at: invoice.createdAt.toISOString(),
    // Once an outcome is reported, no retry comes, whatever the last attempt planned.
    next_retry_at: isoOrNull(invoice.status === 'pending' ? (last?.nextRetryAt ?? null) : null),
    attempts: deliveries.map(attemptView),
  };
}

export const PaymentNotification = Type.Object(
  {
    id: Uuid,
    outcome: Type.Unsafe<'accepted' | 'refused'>({ type: 'string', enum: [...NOTIFICATION_LOG_OUTCOMES] }),
    mode: ModeSchema,
    received_at: Timestamp,
    invoice_id: Nullable(
      Type.String({
        format: 'uuid',
        description: 'The invoice, when the callback named one of yours in this mode; else null',
      }),
    ),
    http_status: Type.Integer({ description: 'What we answered: 200, or the refusal status' }),
    error: Nullable(Type.String({ description: 'The refusal message we answered, e.g. `Amount mismatch`' })),
    status: Nullable(Type.String({ description: 'The status you sent (accepted callbacks)' })),
    transaction_id: Nullable(Type.String({ description: 'The transaction_id you sent (accepted callbacks)' })),
    applied: Nullable(Type.Boolean({ description: 'Whether an accepted callback moved the invoice' })),
    not_applied_reason: Nullable(
      Type.Unsafe<NotAppliedReason>({
        type: 'string',
        enum: [...NOT_APPLIED_REASONS],
        description:
          'Why an accepted callback did not move the invoice: `unknown_status` (not paid, failed, cancelled or ' +
          "refunded), `status_behind` (behind the invoice's status, e.g. a late failed after paid), or " +
          '`possible_double_charge` (a paid for an invoice already paid under another transaction_id: we keep the ' +
          'first payment and flag the invoice for our operators, who contact you); null when it did, or refused',
      }),
    ),
    note: Nullable(
      Type.String({
        description: `\`not_applied_reason\` for people to read, e.g. "${NOT_APPLIED_NOTES.possible_double_charge}"`,
      }),
    ),
    request_id: Nullable(Type.String({ description: 'Our request id, for support' })),
    payload: Nullable(
      Type.String({
        description: `The body as we received it, as JSON text (a refused one's first ${REFUSED_PAYLOAD_MAX_BYTES / 1024} KiB)`,
      }),
    ),
    payload_truncated: Type.Boolean(),
  },
  {
    $id: 'PaymentNotification',
    title: 'Payment callback as recorded',
    examples: [
      {
        id: EXAMPLE_UUID,
        outcome: 'refused',
        mode: 'test',
        received_at: '2026-01-15T09:31:00.000Z',
        invoice_id: EXAMPLE_UUID,
        http_status: 400,
        error: 'Amount mismatch',
        status: null,
        transaction_id: null,
        applied: null,
        not_applied_reason: null,
        note: null,
        request_id: 'req-1f',
        payload:
          '{"invoice_id":"3f1c2b9e-8d4a-4c6f-9b2e-7a5d1e0c4b8a","transaction_id":"chg_1","status":"paid","amount":"99.00","currency":"SAR","gateway":"tap"}',
        payload_truncated: false,
      },
    ],
  },
);

export function paymentNotificationView(entry: NotificationLogEntry): Static<typeof PaymentNotification> {
  return {
    id: entry.id,
    outcome: entry.outcome,
    mode: entry.mode,
    received_at: entry.receivedAt.toISOString(),
    invoice_id: entry.invoiceId,
    http_status: entry.httpStatus,
    error: entry.error,
    status: entry.status,
    transaction_id: entry.transactionId,
    applied: entry.applied,
    not_applied_reason: entry.notAppliedReason,
    note: entry.note,
    request_id: entry.requestId,
    payload: entry.payload,
    payload_truncated: entry.payloadTruncated,
  };
}

export const Ping = Type.Object({
  webhook_id: Type.String({ description: 'The `webhook-id` header sent, `msg_ping_<uuid>`' }),
  endpoint_url: Nullable(Type.String()),
  mode: ModeSchema,
  pinged_at: Timestamp,
  ok: Type.Boolean({ description: 'The endpoint answered 2xx' }),
  http_status: Nullable(Type.Integer({ description: 'null when no answer came (network error, timeout, refused)' })),
  latency_ms: Nullable(Type.Integer()),
  error: Nullable(Type.String({ description: 'null when ok' })),
});

export function pingView(row: EndpointPingRow): Static<typeof Ping> {
  return {
    webhook_id: row.webhookId,
    endpoint_url: row.endpointUrl,
    mode: row.mode,
    pinged_at: row.pingedAt.toISOString(),
    ok: isSuccessStatus(row.httpStatus),
    http_status: row.httpStatus,
    latency_ms: row.latencyMs,
    error: row.error,
  };
}

export const EndpointBreaker = Type.Object(
  {
    state: Type.Union([Type.Literal('closed'), Type.Literal('open'), Type.Literal('half_open')], {
      description: 'closed: requests flow; open: they wait for a probe; half_open: the probe is under way',
    }),
    consecutive_failures: Type.Integer(),
    next_probe_at: Nullable(Timestamp),
    last_error: Nullable(Type.String()),
    changed_at: Nullable(Timestamp),
    history: Type.Array(
      Type.Object({
        event: Type.Union([Type.Literal('opened'), Type.Literal('probe_failed'), Type.Literal('closed')]),
        at: Timestamp,
        consecutive_failures: Type.Integer(),
        error: Nullable(Type.String()),
      }),
      { description: 'Latest first' },
    ),
  },
  { description: "The circuit breaker of the tenant's live payment endpoint (test endpoints have none)" },
);

export function breakerView({
  breaker,
  history,
}: {
  breaker: BreakerRow | null;
  history: BreakerEventRow[];
}): Static<typeof EndpointBreaker> {
  return {
    state: (breaker?.state ?? 'closed') as Static<typeof EndpointBreaker>['state'],
    consecutive_failures: breaker?.consecutiveFailures ?? 0,
    next_probe_at: breaker && breaker.state !== 'closed' ? (breaker.probeAt?.toISOString() ?? null) : null,
    last_error: breaker?.lastError ?? null,
    changed_at: breaker?.changedAt.toISOString() ?? null,
    history: history.map((row) => ({
      event: row.event as Static<typeof EndpointBreaker>['history'][number]['event'],
      at: row.at.toISOString(),
      consecutive_failures: row.consecutiveFailures,
      error: row.error,
    })),
  };
}
