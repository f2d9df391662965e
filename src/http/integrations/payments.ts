// The partner's own view of its payment conversation (DECISIONS §10), with its SSO secret: its
// payment requests with every attempt, sending one again, pinging its endpoint, its callbacks as
// recorded, and, with test credentials, test invoices. Everything is scoped to the credential's
// tenant and mode: another tenant's or the other mode's invoice is a 404. The rules are the
// domain's (src/payments), the same the operators' routes use.
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { signingDependencies } from '../../context.js';
import { AppError, conflict, ErrorCode, notFound } from '../../errors.js';
import {
  createInvoice,
  endpointBreaker,
  getPaymentRequest,
  listNotificationLog,
  listPaymentRequests,
  NO_TEST_ENDPOINT_TO_PING,
  NOTHING_TO_PING,
  NOTIFICATION_LOG_OUTCOMES,
  outcomeAlreadyReported,
  pingPaymentEndpoint,
  REQUEST_TIMEOUT_MS,
  resendPaymentRequest,
} from '../../payments/index.js';
import { PagedList, PagingQuery, pagedList, pageFrom } from '../paging.js';
import { route } from '../route.js';
import { Nullable, Uuid } from '../schemas.js';
import {
  breakerView,
  CurrencyCode,
  EndpointBreaker,
  InvoiceAmount,
  PaymentNotification,
  PaymentRequest,
  Ping,
  paymentNotificationView,
  paymentRequestView,
  pingView,
} from '../shapes/payment-request.js';
import { Envelope, errorResponse, ok, resourceId } from './envelope.js';
import { credentialScope } from './tenant-auth.js';

const INVOICE_STATUSES = ['pending', 'failed', 'paid', 'refunded'] as const;
const tags = ['payments'];
const PaymentRequestRef = Type.Ref(PaymentRequest);
const InvoiceIdParams = Type.Object({
  invoice_id: Type.String({ description: 'The invoice id (UUID); anything else is a 404' }),
});

const CONFLICT_RESPONSE = (examples: string[]) =>
  errorResponse(
    'CONFLICT',
    examples.map((message) => conflict(message)),
  );

const listingPath = (request: FastifyRequest) => request.url.split('?')[0];

export const partnerPaymentRoutes = [
  route({
    method: 'GET',
    url: '/payment-requests/',
    schema: {
      operationId: 'listPaymentRequests',
      tags,
      summary: 'Your payment requests, newest first, each with every attempt',
      description:
        'One per invoice: what we sent your payment endpoint and how each attempt went. A test secret lists ' +
        'test invoices, a live secret live ones. `data` is the paged list.',
      querystring: Type.Object({
        ...PagingQuery,
        status: Type.Optional(
          Type.Unsafe<(typeof INVOICE_STATUSES)[number]>({
            type: 'string',
            enum: [...INVOICE_STATUSES],
            description: 'Only invoices in this status',
          }),
        ),
      }),
      response: { 200: Envelope(PagedList(PaymentRequestRef)) },
    },
    handler: (context) => async (request) => {
      const page = pageFrom(request.query);
      const { status } = request.query;
      const { count, rows } = await listPaymentRequests(context.db, credentialScope(request), { status }, page);
      const filters: Record<string, string> = status ? { status } : {};
      return ok(
        'Payment requests.',
        pagedList(
          context.publicUrls.integrations,
          listingPath(request),
          filters,
          page,
          count,
          rows.map(paymentRequestView),
        ),
      );
    },
  }),

  route({
    method: 'GET',
    url: '/payment-requests/:invoice_id/',
    schema: {
      operationId: 'getPaymentRequest',
      tags,
      summary: 'One payment request with every attempt, and the circuit breaker of the endpoint it goes to',
      params: InvoiceIdParams,
      response: {
        200: Envelope(
          Type.Object({
            payment_request: PaymentRequestRef,
            // null for a test invoice: test endpoints have no breaker.
            endpoint_breaker: Nullable(EndpointBreaker),
          }),
        ),
      },
    },
    handler: (context) => async (request) => {
      const invoiceId = resourceId(request.params.invoice_id, 'Payment request');
      const scope = credentialScope(request);
      const found = await getPaymentRequest(context.db, scope, invoiceId);
      return ok('Payment request.', {
        payment_request: paymentRequestView(found),
        endpoint_breaker:
          found.invoice.mode === 'live' ? breakerView(await endpointBreaker(context.db, scope.tenantId)) : null,
      });
    },
  }),

  route({
    method: 'POST',
    url: '/payment-requests/:invoice_id/resend/',
    schema: {
      operationId: 'resendPaymentRequest',
      tags,
      summary: 'Have the payment request sent again now',
      description:
        'One more attempt now, with the same `webhook-id`, even after a final failure; it appears among the ' +
        'attempts once made. A 409 once you have reported an outcome (the invoice is no longer `pending`). No body.',
      params: InvoiceIdParams,
      response: {
        200: Envelope(Type.Object({ invoice_id: Uuid, attempt: Type.Integer({ minimum: 1 }) })),
        409: CONFLICT_RESPONSE([outcomeAlreadyReported('paid')]),
      },
    },
    handler: (context) => async (request) => {
      const invoiceId = resourceId(request.params.invoice_id, 'Payment request');
      const attempt = await resendPaymentRequest(context.db, context.paymentQueue, invoiceId, credentialScope(request));
      return ok('Payment request queued again.', { invoice_id: invoiceId, attempt });
    },
  }),

  route({
    method: 'POST',
    url: '/payment-endpoint/ping/',
    config: { rateLimitBudget: 'pings' },
    schema: {
      operationId: 'pingPaymentEndpoint',
      tags,
      summary: 'Send a signed ping to your payment endpoint now and report the answer',
      description:
        'Sends `{"type": "ping", "tenant_id", "created_at"}` signed like a payment request (the `ping` webhook) ' +
        `to your payment endpoint (with a test secret: your test payment endpoint), waits for the answer (${REQUEST_TIMEOUT_MS / 1000} s ` +
        'at most) and reports it. An endpoint that fails is an outcome (`ok: false`); none configured is a 409. No body. ' +
        'Pings have a smaller rate limit of their own per secret (429 `RATE_LIMITED` past it).',
      response: {
        200: Envelope(Type.Object({ ping: Ping })),
        409: CONFLICT_RESPONSE([NOTHING_TO_PING, NO_TEST_ENDPOINT_TO_PING]),
      },
    },
    handler: (context) => async (request) => {
      const row = await pingPaymentEndpoint(signingDependencies(context), request.tenant.id, request.mode);
      return ok('Ping sent.', { ping: pingView(row) });
    },
  }),

  route({
    method: 'GET',
    url: '/payment-notifications/',
    schema: {
      operationId: 'listPaymentNotifications',
      tags,
      summary: 'Your payment callbacks as we recorded them, accepted and refused, newest first',
      description:
        'Every callback sent with your partner API key (of this mode): accepted ones (stored; `note` says when ' +
        'one did not move the invoice, e.g. an unknown status) and refused ones with the message we answered. ' +
        'Refused ones are kept for a limited number of days. Duplicates are not listed again. `data` is the paged list.',
      querystring: Type.Object({
        ...PagingQuery,
        outcome: Type.Optional(
          Type.Unsafe<(typeof NOTIFICATION_LOG_OUTCOMES)[number]>({
            type: 'string',
            enum: [...NOTIFICATION_LOG_OUTCOMES],
            description: 'Only accepted or only refused callbacks',
          }),
        ),
      }),
      response: { 200: Envelope(PagedList(Type.Ref(PaymentNotification))) },
    },
    handler: (context) => async (request) => {
      const page = pageFrom(request.query);
      const { outcome } = request.query;
      const { count, rows } = await listNotificationLog(context.db, credentialScope(request), { outcome }, page);
      return ok(
        'Payment callbacks.',
        pagedList(
          context.publicUrls.integrations,
          listingPath(request),
          outcome ? { outcome } : {},
          page,
          count,
          rows.map(paymentNotificationView),
        ),
      );
    },
  }),

  route({
    method: 'POST',
    url: '/test/invoices/',
    // A JSON number arrives as a lossless number, not a string: refused rather than coerced.
    config: { losslessJsonNumbers: true, rateLimitBudget: 'test_invoices' },
    schema: {
      operationId: 'createTestInvoice',
      tags,
      summary: 'Create a test invoice: a real signed payment request goes to your test payment endpoint',
      description:
        'Test credentials only (`Authorization: Api-Key pis_test_sso_...`); a live secret is a 403 ' +
        '`TEST_MODE_ONLY`. The payment request is the `payment.requested` webhook, signed with your payment ' +
        'endpoint secret, sent to `test_payment_endpoint_url`; report its outcome with your test partner API key ' +
        '(`pis_test_pay_...`). A test invoice names only a test trip, which it moves as a live invoice moves a live one, ' +
        'and never appears to live credentials. Test invoices have a smaller rate limit of their own per secret ' +
        '(429 `RATE_LIMITED` past it) and are deleted after a number of days, with their attempts and callbacks.',
      body: Type.Object(
        {
          amount: InvoiceAmount,
          currency: CurrencyCode,
          trip_id: Type.Optional(
            Nullable(Type.String({ format: 'uuid', description: 'One of your test trips (a live trip is a 404)' })),
          ),
        },
        {
          additionalProperties: false,
          examples: [{ amount: '100.00', currency: 'SAR', trip_id: null }],
        },
      ),
      response: {
        201: Envelope(Type.Object({ payment_request: PaymentRequestRef })),
        403: errorResponse('TEST_MODE_ONLY: a live SSO secret was sent', [new AppError(ErrorCode.TEST_MODE_ONLY)]),
        404: errorResponse('NOT_FOUND: `trip_id` names no test trip of yours', [notFound('Trip')]),
      },
    },
    handler: (context) => async (request, reply) => {
      if (request.mode !== 'test') throw new AppError(ErrorCode.TEST_MODE_ONLY);
      const { invoice } = await createInvoice(context.database, context.paymentQueue, {
        ...request.body,
        tenant_id: request.tenant.id,
        mode: 'test',
      });
      const found = await getPaymentRequest(context.db, credentialScope(request), invoice.id);
      return reply.code(201).send(ok('Test invoice created.', { payment_request: paymentRequestView(found) }));
    },
  }),
];
