// Admin routes for invoices, their payment events and delivery attempts (DECISIONS §8).
import { type Static, Type } from '@sinclair/typebox';
import { stringify } from 'lossless-json';
import type { AuditEventInput } from '../../audit/index.js';
import {
  createInvoice,
  getInvoice,
  IDEMPOTENCY_WINDOW_HOURS,
  INACTIVE_TENANT,
  INVOICE_STATUSES,
  type InvoiceRow,
  idempotencyKeyReused,
  listDeliveries,
  listInvoices,
  listPaymentEvents,
  listRefusedNotifications,
  NOT_APPLIED_REASONS,
  outcomeAlreadyReported,
  type PaymentDeliveryRow,
  type PaymentEventRow,
  REFUSED_PAYLOAD_MAX_BYTES,
  RESPONSE_BODY_MAX_BYTES,
  type RefusedNotificationRow,
  requestSent,
  resendPaymentRequest,
  storedNotAppliedReason,
} from '../../payments/index.js';
import { listenerUrl } from '../host.js';
import { storedJson } from '../json-body.js';
import { EXAMPLE_UUID } from '../openapi.js';
import { PagedList, PagingQuery, pagedList, pageFrom, requestPath } from '../paging.js';
import { route } from '../route.js';
import { IdParams, isoOrNull, ModeSchema, Nullable, Timestamp, Uuid } from '../schemas.js';
import { attemptView, CurrencyCode, InvoiceAmount } from '../shapes/payment-request.js';
import { adminChange } from './audit.js';
import { conflictResponse } from './error-responses.js';

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
  possible_double_charge: Type.Boolean({
    description:
      'A `paid` under another transaction_id came after the invoice was paid: the traveller may have paid twice. ' +
      'That event is stored, not applied (`not_applied_reason: "possible_double_charge"`)',
  }),
  mode: ModeSchema('`test`: made with test credentials; only test keys see and move it'),
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
    possible_double_charge: row.possibleDoubleCharge,
    mode: row.mode,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

const InvoiceListQuery = Type.Object({
  ...PagingQuery,
  tenant_id: Type.Optional(Type.String({ format: 'uuid', description: "Only this tenant's invoices" })),
  status: Type.Optional(
    Type.Union(
      INVOICE_STATUSES.map((status) => Type.Literal(status)),
      { description: 'Only invoices in this status' },
    ),
  ),
  mode: Type.Optional(ModeSchema('Only live or only test invoices; both when absent')),
  since: Type.Optional(
    Type.String({ format: 'date-time', description: 'Only invoices created at or after this time' }),
  ),
  possible_double_charge: Type.Optional(
    Type.Boolean({ description: '`true`: only invoices flagged as possible double charges' }),
  ),
});

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
  applied: Type.Boolean({ description: 'Whether it moved the invoice (false: see `not_applied_reason`)' }),
  not_applied_reason: Nullable(
    Type.Unsafe<(typeof NOT_APPLIED_REASONS)[number]>({
      type: 'string',
      enum: [...NOT_APPLIED_REASONS],
      description:
        'Why it did not move the invoice: `unknown_status` (not paid, failed, cancelled or refunded), ' +
        "`status_behind` (behind the invoice's status, e.g. a late failed after paid), `possible_double_charge` " +
        '(a paid for an invoice already paid under another transaction_id); null when applied',
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
    not_applied_reason: storedNotAppliedReason(row),
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
  request: Nullable(
    Type.Object(
      {
        url: Type.String({ description: 'The payment endpoint it was POSTed to' }),
        webhook_id: Type.String({ description: 'The `webhook-id` header: `msg_<invoice_id>` on every attempt' }),
        webhook_timestamp: Type.Integer({ description: 'The `webhook-timestamp` header, Unix seconds' }),
        body: Type.String({ description: 'The body exactly as signed and sent' }),
      },
      {
        description:
          'What the attempt sent (its `webhook-signature`, one per active secret, is not kept); null when ' +
          'nothing was sent (see `error`), and for attempts made before requests were kept',
      },
    ),
  ),
});

/** The attempt as partners see it (`attemptView`), with its id and what it sent. */
export function deliveryView(row: PaymentDeliveryRow): Static<typeof Delivery> {
  const sent = requestSent(row);
  const request = sent && {
    url: sent.url,
    webhook_id: sent.webhookId,
    webhook_timestamp: sent.webhookTimestamp,
    body: sent.body,
  };
  return { id: row.id, ...attemptView(row), request };
}

export const adminPaymentRoutes = [
  route({
    method: 'POST',
    url: '/invoices',
    // A JSON number arrives as a lossless number, not a string: refused rather than coerced.
    // The invoice, its payment request and its audit event: one transaction.
    config: { resource: 'Tenant', losslessJsonNumbers: true, auditedInItsTransaction: true },
    schema: {
      operationId: 'createInvoice',
      tags: ['invoices'],
      summary: "Create an invoice; its payment request goes to the tenant's payment endpoint",
      body: Type.Object(
        {
          tenant_id: Uuid,
          amount: InvoiceAmount,
          currency: CurrencyCode,
          trip_id: Type.Optional(Nullable(Uuid)),
        },
        { additionalProperties: false },
      ),
      headers: Type.Object({
        'idempotency-key': Type.Optional(
          Type.String({
            minLength: 1,
            maxLength: 255,
            pattern: '^[!-~]+$',
            description:
              `Makes a retried call safe: the same key with the same body within ${IDEMPOTENCY_WINDOW_HOURS} h ` +
              'answers the first invoice (header `Idempotent-Replayed: true`) and sends no second payment ' +
              'request; the same key with another body is a 409. 1 to 255 visible ASCII characters, e.g. a UUID.',
          }),
        ),
      }),
      response: {
        409: conflictResponse({
          'inactive tenant': INACTIVE_TENANT,
          'Idempotency-Key reused': idempotencyKeyReused(EXAMPLE_UUID),
        }),
        201: Type.Object({ invoice: Invoice }),
      },
    },
    handler: (context) => async (request, reply) => {
      let change: AuditEventInput | undefined;
      const { invoice, replayed } = await createInvoice(
        context.database,
        context.paymentQueue,
        request.body,
        request.headers['idempotency-key'],
        (invoiceId) => {
          const { amount, currency } = request.body;
          change = adminChange(request, 201, invoiceId, `${invoiceId.slice(0, 8)} (${amount} ${currency})`);
          return change;
        },
      );
      request.log.info({ audit: change }, 'admin change');
      if (replayed) reply.header('idempotent-replayed', 'true');
      return reply.code(201).send({ invoice: invoiceView(invoice) });
    },
  }),

  route({
    method: 'GET',
    url: '/invoices',
    config: { resource: 'Tenant' },
    schema: {
      operationId: 'listInvoices',
      tags: ['invoices'],
      summary: 'Invoices of every tenant, newest first, both modes unless `mode` is given',
      description: 'An unknown filter value (a status or mode that does not exist, a malformed id or time) is a 400.',
      querystring: InvoiceListQuery,
      response: { 200: PagedList(Invoice) },
    },
    handler: (context) => async (request) => {
      const { tenant_id: tenantId, status, mode, since, possible_double_charge: flagged } = request.query;
      const page = pageFrom(request.query);
      const listing = await listInvoices(context.db, {
        tenantId,
        status,
        mode,
        possibleDoubleCharge: flagged,
        from: since === undefined ? undefined : new Date(since),
        ...page,
      });
      // The filters as given, in canonical form, so that `next` and `previous` keep them.
      const filters = Object.fromEntries(
        Object.entries({ tenant_id: tenantId, status, mode, since, possible_double_charge: flagged })
          .filter((entry) => entry[1] !== undefined)
          .map(([name, value]) => [name, String(value)]),
      );
      return pagedList(
        listenerUrl(request.server),
        requestPath(request.url),
        filters,
        page,
        listing.count,
        listing.invoices.map(invoiceView),
      );
    },
  }),

  route({
    method: 'GET',
    url: '/invoices/:id',
    config: { resource: 'Invoice' },
    schema: {
      operationId: 'getInvoice',
      tags: ['invoices'],
      summary: 'An invoice with its stored payment events, its refused callbacks and its delivery attempts',
      description:
        '`refused_notifications`: callbacks of its tenant (in its mode) naming this invoice that were refused, ' +
        'whatever check refused them (a missing field, a gateway, amount or currency mismatch...), oldest first, ' +
        'kept for RETENTION_REFUSED_NOTIFICATIONS_DAYS.',
      params: IdParams,
      response: {
        200: Type.Object({
          invoice: Invoice,
          events: Type.Array(PaymentEvent),
          refused_notifications: Type.Array(RefusedNotification),
          deliveries: Type.Array(Delivery),
        }),
      },
    },
    handler: (context) => async (request, reply) => {
      const invoice = invoiceView(await getInvoice(context.db, request.params.id));
      const events = (await listPaymentEvents(context.db, invoice.id)).map(({ event, payloadJson }) =>
        paymentEventView(event, storedJson(payloadJson)),
      );
      const refused = (await listRefusedNotifications(context.db, invoice.id)).map(refusedNotificationView);
      const deliveries = (await listDeliveries(context.db, invoice.id)).map(deliveryView);
      // Serialised losslessly: a payload's `100.10` must not come back as 100.1.
      return reply
        .type('application/json; charset=utf-8')
        .serializer((payload) => stringify(payload) ?? 'null')
        .send({ invoice, events, refused_notifications: refused, deliveries });
    },
  }),

  route({
    method: 'POST',
    url: '/invoices/:id/payment-requests',
    config: { resource: 'Invoice' },
    schema: {
      operationId: 'resendPaymentRequest',
      tags: ['invoices'],
      summary: 'Send the payment request again: one more attempt now, even after a final failure',
      description:
        "Same `webhook-id`, recorded like every attempt (see the invoice's `deliveries`). A 409 once the partner has reported an outcome.",
      params: IdParams,
      response: {
        202: Type.Object({ invoice_id: Uuid, attempt: Type.Integer({ minimum: 1 }) }),
        409: conflictResponse({ 'outcome reported': outcomeAlreadyReported('paid') }),
      },
    },
    handler: (context) => async (request, reply) => {
      const attempt = await resendPaymentRequest(context.db, context.paymentQueue, request.params.id);
      return reply.code(202).send({ invoice_id: request.params.id, attempt });
    },
  }),
];
