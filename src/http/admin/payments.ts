// Admin routes for invoices, their payment events and delivery attempts (DECISIONS §8).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { stringify } from 'lossless-json';
import type { AppContext } from '../../context.js';
import {
  createInvoice,
  getInvoice,
  IDEMPOTENCY_WINDOW_HOURS,
  INACTIVE_TENANT,
  idempotencyKeyReused,
  listDeliveries,
  listPaymentEvents,
  listRefusedNotifications,
  outcomeAlreadyReported,
  resendPaymentRequest,
} from '../../payments/index.js';
import { storedJson } from '../json-body.js';
import { EXAMPLE_UUID } from '../openapi.js';
import { IdParams, Nullable, Uuid } from '../schemas.js';
import { CurrencyCode, InvoiceAmount } from '../shapes/payment-request.js';
import { conflictResponse } from './error-responses.js';
import {
  Delivery,
  deliveryView,
  Invoice,
  invoiceView,
  PaymentEvent,
  paymentEventView,
  RefusedNotification,
  refusedNotificationView,
} from './shapes.js';

export const adminPaymentRoutes: FastifyPluginAsyncTypebox<{ context: AppContext }> = async (app, { context }) => {
  const { db, paymentQueue } = context;

  app.post(
    '/invoices',
    {
      // A JSON number arrives as a lossless number, not a string: refused rather than coerced.
      config: { losslessJsonNumbers: true },
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
    },
    async (request, reply) => {
      const { invoice, replayed } = await createInvoice(
        db,
        paymentQueue,
        request.body,
        request.headers['idempotency-key'],
      );
      if (replayed) reply.header('idempotent-replayed', 'true');
      return reply.code(201).send({ invoice: invoiceView(invoice) });
    },
  );

  app.get(
    '/invoices/:id',
    {
      schema: {
        operationId: 'getInvoice',
        tags: ['invoices'],
        summary: 'An invoice with its stored payment events, its refused callbacks and its delivery attempts',
        description:
          '`refused_notifications`: callbacks of its tenant naming this invoice that were refused (gateway, amount ' +
          'or currency mismatch), oldest first, kept for RETENTION_REFUSED_NOTIFICATIONS_DAYS.',
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
    },
    async (request, reply) => {
      const invoice = invoiceView(await getInvoice(db, request.params.id));
      const events = (await listPaymentEvents(db, invoice.id)).map(({ event, payloadJson }) =>
        paymentEventView(event, storedJson(payloadJson)),
      );
      const refused = (await listRefusedNotifications(db, invoice.id)).map(refusedNotificationView);
      const deliveries = (await listDeliveries(db, invoice.id)).map(deliveryView);
      // Serialised losslessly: a payload's `100.10` must not come back as 100.1.
      return reply
        .serializer((payload) => stringify(payload) ?? 'null')
        .send({ invoice, events, refused_notifications: refused, deliveries });
    },
  );

  app.post(
    '/invoices/:id/payment-requests',
    {
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
    },
    async (request, reply) => {
      const attempt = await resendPaymentRequest(db, paymentQueue, request.params.id);
      return reply.code(202).send({ invoice_id: request.params.id, attempt });
    },
  );
};
