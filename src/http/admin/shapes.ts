// The admin host's resources: each written once as a TypeBox schema, its type derived with Static<>,
// and the mapping from the domain's row to it.
import { type Static, Type } from '@sinclair/typebox';
import type { AuditEventRow } from '../../audit/index.js';
import {
  type InvoiceRow,
  notAppliedReason,
  type PaymentDeliveryRow,
  type PaymentEventRow,
  REFUSED_PAYLOAD_MAX_BYTES,
  RESPONSE_BODY_MAX_BYTES,
  type RefusedNotificationRow,
  UNKNOWN_STATUS_NOTE,
} from '../../payments/index.js';
import type { CredentialWithUse, TenantRow } from '../../tenants/index.js';
import { Nullable, Timestamp, Uuid } from '../schemas.js';

const isoOrNull = (date: Date | null) => date?.toISOString() ?? null;

export const Tenant = Type.Object({
  id: Uuid,
  slug: Type.String(),
  name: Type.String(),
  gateway: Type.String(),
  is_active: Type.Boolean(),
  payment_endpoint_url: Nullable(Type.String()),
  test_payment_endpoint_url: Nullable(Type.String({ description: "Where test invoices' payment requests go" })),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export function tenantView(row: TenantRow): Static<typeof Tenant> {
  return {
    id: row.id,
    slug: row.slug,
    name: row.name,
    gateway: row.gateway,
    is_active: row.isActive,
    payment_endpoint_url: row.paymentEndpointUrl,
    test_payment_endpoint_url: row.testPaymentEndpointUrl,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

export const Credential = Type.Object({
  id: Uuid,
  kind: Type.String(),
  hint: Type.String({
    description:
      "The secret's prefix and last four characters, to tell secrets apart (earlier ones: its first characters)",
  }),
  name: Nullable(Type.String()),
  scopes: Type.Array(Type.String()),
  tenant_id: Nullable(Uuid),
  created_at: Timestamp,
  revoked_at: Nullable(Timestamp),
  last_used_at: Nullable(
    Type.String({ format: 'date-time', description: 'When it was last presented, to the minute' }),
  ),
});

export function credentialView(row: CredentialWithUse): Static<typeof Credential> {
  return {
    id: row.id,
    kind: row.kind,
    hint: row.hint,
    name: row.name,
    scopes: row.scopes,
    tenant_id: row.tenantId,
    created_at: row.createdAt.toISOString(),
    revoked_at: isoOrNull(row.revokedAt),
    last_used_at: isoOrNull(row.lastUsedAt),
  };
}

export const Invoice = Type.Object({
  id: Uuid,
  tenant_id: Uuid,
  trip_id: Nullable(Uuid),
  amount: Type.String({ description: 'Decimal string with the currency\'s ISO 4217 minor-unit places, e.g. "100.00"' }),
  currency: Type.String({ description: 'ISO 4217 code' }),
  status: Type.String({ description: '`pending`, then `failed`, `paid` or `refunded` (forward only)' }),
  gateway_reference: Nullable(Type.String({ description: 'transaction_id of the last applied notification' })),
  paid_at: Nullable(Timestamp),
  payment_url: Nullable(Type.String({ description: "From the partner's reply to the payment request" })),
  mode: Type.Unsafe<'live' | 'test'>({
    type: 'string',
    enum: ['live', 'test'],
    description: '`test`: made with test credentials; only test keys see and move it',
  }),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export function invoiceView(row: InvoiceRow): Static<typeof Invoice> {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    trip_id: row.tripId,
    amount: row.amount,
    currency: row.currency,
    status: row.status,
    gateway_reference: row.gatewayReference,
    paid_at: isoOrNull(row.paidAt),
    payment_url: row.paymentUrl,
    mode: row.mode,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

export const PaymentEvent = Type.Object({
  id: Uuid,
  tenant_id: Uuid,
  invoice_id: Uuid,
  transaction_id: Type.String(),
  status: Type.String({ description: 'As notified' }),
  gateway: Type.String(),
  payload: Type.Unknown({
    description:
      'The notification as received; numbers keep their digits. One nested deeper than a body may be ' +
      '(stored before that limit) is given as its JSON text',
  }),
  applied: Type.Boolean({
    description: 'Whether it moved the invoice (false: behind its status, or an unknown status)',
  }),
  not_applied_reason: Nullable(
    Type.String({
      description: `Why it did not move the invoice: "${UNKNOWN_STATUS_NOTE}" (not paid, failed, cancelled or refunded), or behind the invoice's status; null when applied`,
    }),
  ),
  status_before: Type.String(),
  status_after: Type.String(),
  request_id: Nullable(Type.String()),
  received_at: Timestamp,
});

/** `payload` is the stored payload already parsed losslessly (its numbers keep their digits). */
export function paymentEventView(row: PaymentEventRow, payload: unknown): Static<typeof PaymentEvent> {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    invoice_id: row.invoiceId,
    transaction_id: row.transactionId,
    status: row.status,
    gateway: row.gateway,
    payload,
    applied: row.applied,
    not_applied_reason: notAppliedReason(row.status, row.applied),
    status_before: row.statusBefore,
    status_after: row.statusAfter,
    request_id: row.requestId,
    received_at: row.receivedAt.toISOString(),
  };
}

export const RefusedNotification = Type.Object({
  id: Uuid,
  received_at: Timestamp,
  http_status: Type.Integer({ description: 'The status answered' }),
  error: Type.String({ description: 'The message answered, e.g. `Amount mismatch`' }),
  request_id: Nullable(Type.String()),
  payload: Nullable(
    Type.String({
      description: `The body as received (JSON text, its first ${REFUSED_PAYLOAD_MAX_BYTES / 1024} KiB); null when none was read`,
    }),
  ),
  payload_truncated: Type.Boolean({ description: 'The body was longer than what `payload` keeps' }),
});

export function refusedNotificationView(row: RefusedNotificationRow): Static<typeof RefusedNotification> {
  return {
    id: row.id,
    received_at: row.receivedAt.toISOString(),
    http_status: row.httpStatus,
    error: row.error,
    request_id: row.requestId,
    payload: row.payload,
    payload_truncated: row.payloadTruncated,
  };
}

export const Delivery = Type.Object({
  id: Uuid,
  attempt: Type.Integer({ minimum: 1 }),
  attempted_at: Timestamp,
  http_status: Nullable(Type.Integer({ description: 'null when no answer came (network error, timeout, refused)' })),
  latency_ms: Nullable(Type.Integer()),
  error: Nullable(Type.String({ description: 'null on success; "(final: not retried)" marks the last attempt' })),
  response_body: Nullable(
    Type.String({
      description: `The start (${RESPONSE_BODY_MAX_BYTES} bytes) of the endpoint's reply; null without one`,
    }),
  ),
  next_retry_at: Nullable(
    Type.String({ format: 'date-time', description: 'When the next attempt is due; null when none is planned' }),
  ),
});

export function deliveryView(row: PaymentDeliveryRow): Static<typeof Delivery> {
  return {
    id: row.id,
    attempt: row.attempt,
    attempted_at: row.attemptedAt.toISOString(),
    http_status: row.httpStatus,
    latency_ms: row.latencyMs,
    error: row.error,
    response_body: row.responseBody,
    next_retry_at: isoOrNull(row.nextRetryAt),
  };
}

export { breakerView, EndpointBreaker, Ping, pingView } from '../shapes/payment-request.js';

export const AuditEvent = Type.Object({
  id: Uuid,
  occurred_at: Timestamp,
  actor: Type.String({
    description: 'The operator (`admin token` for ADMIN_TOKEN), with the console session when made there',
  }),
  action: Type.String({ description: 'Method and route template, e.g. `PATCH /admin/v1/tenants/:id`' }),
  target_id: Nullable(Type.String({ description: 'The changed or created resource' })),
  fields: Type.Array(Type.String(), { description: 'Names of the fields sent (never their values)' }),
  status: Nullable(Type.Integer({ description: 'HTTP status answered; null for partnerctl commands' })),
  address: Nullable(Type.String({ description: "The client's address" })),
  request_id: Nullable(Type.String()),
  operator: Nullable(
    Type.Object(
      {
        id: Nullable(Type.String({ format: 'uuid', description: 'null: the bootstrap ADMIN_TOKEN' })),
        name: Type.String({ description: "The operator's name when the change was made" }),
      },
      { description: 'Who made the change; null for changes made before operators were named' },
    ),
  ),
});

export function auditEventView(row: AuditEventRow): Static<typeof AuditEvent> {
  return {
    id: row.id,
    occurred_at: row.occurredAt.toISOString(),
    actor: row.actor,
    action: row.action,
    target_id: row.targetId,
    fields: row.fields,
    status: row.status,
    address: row.address,
    request_id: row.requestId,
    operator: row.operatorName === null ? null : { id: row.operatorId, name: row.operatorName },
  };
}
