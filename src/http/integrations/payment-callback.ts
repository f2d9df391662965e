// `POST /api/v1/payments/notify/`: the partner's payment backend reports an outcome (spec 4.6).
// Outside the `/api/v1` SSO scope: its own key (`X-API-KEY`), its own bodies (`{status}` /
// `{error}`, never the envelope), its own error handler. The checks live in payments/callback.ts.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { stringify } from 'lossless-json';
import type { AppContext } from '../../context.js';
import { AppError, ErrorCode } from '../../errors.js';
import {
  type CallbackRejection,
  type CallbackResult,
  NotificationStore,
  namedInvoiceId,
  processNotification,
  RefusalRecorder,
} from '../../payments/index.js';
import { type Mode, resolvePartnerApiKey, type TenantCredential, type TenantRow } from '../../tenants/index.js';
import { authenticator, type CredentialCheck } from '../authentication.js';
import { challenge, challengeHeader, credentialHint } from '../credential-hints.js';
import { type ErrorRenderer, reportedError } from '../errors.js';
import { BODY_LIMIT_TEXT } from '../host.js';
import { EXAMPLE_UUID, namedExamples, retryAfterHeader, withRateLimitHeaders } from '../openapi.js';
import type { RateLimitGuard } from '../rate-limit.js';

export const PAYMENT_CALLBACK_PREFIX = '/api/v1/payments/notify';
export const PAYMENT_CALLBACK_PATH = `${PAYMENT_CALLBACK_PREFIX}/`;

const NotificationBody = Type.Object(
  {
    invoice_id: Type.String({ format: 'uuid', description: 'The invoice this payment is for' }),
    transaction_id: Type.String({
      description: 'Partner transaction reference or gateway transaction id; stable across retries',
    }),
    status: Type.String({
      description: '`paid`, `failed`, `cancelled` or `refunded`; other values are stored without a transition',
    }),
    amount: Type.Union([Type.String(), Type.Number()], {
      description: 'Must equal the invoice amount as an exact decimal (`"100.1"`, `100.10` and `"100.10"` are equal)',
    }),
    currency: Type.String({ description: 'Must equal the invoice currency exactly' }),
    gateway: Type.String({ description: "Must equal the tenant's configured gateway" }),
  },
  {
    additionalProperties: true,
    description: 'Extra fields (e.g. a nested object of gateway data) are stored with the event and otherwise ignored.',
    examples: [
      {
        invoice_id: EXAMPLE_UUID,
        transaction_id: 'chg_TS02A5720231433Qs1w0809820',
        status: 'paid',
        amount: '100.00',
        currency: 'SAR',
        gateway: 'tap',
      },
    ],
  },
);

const Accepted = Type.Object(
  {
    status: Type.Unsafe<'success' | 'duplicate'>({
      type: 'string',
      enum: ['success', 'duplicate'],
      description:
        '`duplicate`: this (transaction_id, status, gateway) was already received; nothing changed. `success` ' +
        'is also the answer for one stored but not applied (a late status, an unknown status, a second `paid` ' +
        'under another transaction_id for a paid invoice): your notification log says why',
    }),
  },
  { examples: [{ status: 'success' }, { status: 'duplicate' }] },
);
const ErrorBody = Type.Object({ error: Type.String() });

const MISSING_API_KEY = 'Missing API key';
const UNAUTHORIZED = 'Unauthorized';
const INVALID_JSON_BODY = 'Invalid JSON body';
const INTERNAL = { httpStatus: 500, error: 'Internal server error' };

type CallbackStatus = 400 | 401 | 403 | 404 | 405 | 408 | 413 | 429 | 431 | 503;
interface CallbackAnswer {
  httpStatus: CallbackStatus;
  /** Absent: the error's own message (step 1's, `partnerApiKeyCheck`). */
  error?: string;
}

/**
 * The callback's renderer table: its status and exact message for each AppError it answers, from
 * its own scope (the authenticator, the body parser, the rate limits, the database), its not-found
 * handler and the host's refusals before routing. Anything else is a 500.
 */
const CALLBACK_ANSWERS: Partial<Record<ErrorCode, CallbackAnswer>> = {
  UNAUTHORIZED: { httpStatus: 401 },
  INVALID_JSON: { httpStatus: 400, error: INVALID_JSON_BODY },
  UNSUPPORTED_MEDIA_TYPE: { httpStatus: 400, error: INVALID_JSON_BODY },
  VALIDATION_ERROR: { httpStatus: 400, error: INVALID_JSON_BODY },
  PAYLOAD_TOO_LARGE: { httpStatus: 413, error: 'Payload too large' },
  RATE_LIMITED: { httpStatus: 429, error: 'Too many requests' },
  SERVICE_UNAVAILABLE: { httpStatus: 503, error: 'Service unavailable' },
  NOT_FOUND: { httpStatus: 404, error: 'Not found' },
  METHOD_NOT_ALLOWED: { httpStatus: 405, error: 'Method not allowed' },
  MALFORMED_REQUEST: { httpStatus: 400, error: 'Malformed request' },
  HEADERS_TOO_LARGE: { httpStatus: 431, error: 'Request header fields too large' },
  REQUEST_TIMEOUT: { httpStatus: 408, error: 'Request timeout' },
};

function callbackAnswer(appError: AppError): { httpStatus: number; error: string } {
  const answer = CALLBACK_ANSWERS[appError.code];
  return answer ? { httpStatus: answer.httpStatus, error: answer.error ?? appError.message } : INTERNAL;
}

/** How the callback says an AppError: `{"error": "<exact message>"}`. */
export const callbackErrors: ErrorRenderer = {
  body: (error) => ({ error: callbackAnswer(error).error }),
  status: (error) => callbackAnswer(error).httpStatus,
};

/** One of each refusal of steps 2 to 8, to document the exact bodies answered. */
const EVERY_REFUSAL: CallbackRejection[] = [
  { reason: 'invalid_json' },
  { reason: 'missing_field', field: 'transaction_id' },
  { reason: 'invalid_field', field: 'amount' },
  { reason: 'invoice_not_found' },
  { reason: 'forbidden' },
  { reason: 'gateway_mismatch' },
  { reason: 'amount_mismatch' },
  { reason: 'currency_mismatch' },
];

/** A documented error status of the callback, with every body it may carry as an example. */
function errorResponse(httpStatus: CallbackStatus, description: string) {
  const scopeErrors: ErrorCode[] = ['PAYLOAD_TOO_LARGE', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE'];
  const messages = [
    { httpStatus: 401, error: MISSING_API_KEY },
    { httpStatus: 401, error: UNAUTHORIZED },
    ...EVERY_REFUSAL.map(refusal),
    ...scopeErrors.map((code) => callbackAnswer(new AppError(code))),
  ].filter((candidate) => candidate.httpStatus === httpStatus);
  return {
    description,
    content: {
      'application/json': {
        schema: ErrorBody,
        examples: namedExamples(messages.map(({ error }) => [error, { error }])),
      },
    },
  };
}

/** Each refusal's status and exact message (DECISIONS §4). */
function refusal(rejection: CallbackRejection): { httpStatus: CallbackStatus; error: string } {
  switch (rejection.reason) {
    case 'invalid_json':
      return { httpStatus: 400, error: INVALID_JSON_BODY };
    case 'missing_field':
      return { httpStatus: 400, error: `Missing ${rejection.field}` };
    case 'invalid_field':
      return { httpStatus: 400, error: `Invalid ${rejection.field}` };
    case 'invoice_not_found':
      return { httpStatus: 404, error: 'Invoice not found' };
    case 'forbidden':
      return { httpStatus: 403, error: 'Forbidden' };
    case 'gateway_mismatch':
      return { httpStatus: 400, error: 'Gateway mismatch' };
    case 'amount_mismatch':
      return { httpStatus: 400, error: 'Amount mismatch' };
    case 'currency_mismatch':
      return { httpStatus: 400, error: 'Currency mismatch' };
  }
}

/** Only these, and only as short strings, reach the log: never the key, never card data. */
function loggableFields(body: unknown) {
  const source = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
  const fields: Record<string, string> = {};
  for (const field of ['invoice_id', 'transaction_id', 'status', 'gateway']) {
    const value = source[field];
    if (typeof value === 'string') fields[field] = value.slice(0, 100);
  }
  return fields;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The tenant of the payment callback's `X-API-KEY`. */
    partnerTenant: TenantRow;
    /** The mode of that key: a test key reaches only test invoices. */
    partnerMode: Mode;
  }
}

/** The key of `X-API-KEY`, when the request has one. */
function apiKeyOf(request: FastifyRequest): string | undefined {
  const header = request.headers['x-api-key'];
  return typeof header === 'string' && header !== '' ? header : undefined;
}

/** Step 1 of DECISIONS §4: the tenant (and mode) whose partner API key `X-API-KEY` carries. */
const partnerApiKeyCheck = ({ db, caches }: AppContext): CredentialCheck<TenantCredential> => ({
  lookUp: (request) => resolvePartnerApiKey(db, caches, apiKeyOf(request)),
  rateLimitKey: (credential) => credential.credentialId,
  refusal: (request) => new AppError(ErrorCode.UNAUTHORIZED, apiKeyOf(request) ? UNAUTHORIZED : MISSING_API_KEY),
  accept(request, { tenant, mode }) {
    request.partnerTenant = tenant;
    request.partnerMode = mode;
    return undefined;
  },
});

/** Register with `{ prefix: PAYMENT_CALLBACK_PREFIX }`. */
export const paymentCallbackRoutes: FastifyPluginAsyncTypebox<{ context: AppContext; limits: RateLimitGuard }> = async (
  app,
  { context, limits },
) => {
  const { db } = context;
  const store = new NotificationStore(context.database);
  const { metrics } = context;
  const refusals = new RefusalRecorder(db, {
    dropped: () => metrics.refusedNotificationRecords.inc({ result: 'dropped' }),
    failed: (error, count) => {
      metrics.refusedNotificationRecords.inc({ result: 'failed' }, count);
      app.log.warn({ err: error, count }, 'refused payment notifications not recorded');
    },
  });
  const modeOf = (request: FastifyRequest) => (request.partnerTenant ? request.partnerMode : 'none');
  const answer = (request: FastifyRequest, reply: FastifyReply, result: CallbackResult, payload: string | null) => {
    if (result.accepted) {
      const mode = modeOf(request);
      metrics.paymentNotifications.inc({ outcome: result.accepted, mode });
      if (result.notAppliedReason === 'unknown_status') metrics.unknownStatusNotifications.inc({ mode });
      if (result.notAppliedReason === 'possible_double_charge') metrics.possibleDoubleCharges.inc({ mode });
      return reply.code(200).send({ status: result.accepted });
    }
    const { httpStatus, error } = refusal(result.rejected);
    return refuse(request, reply, httpStatus, error, payload);
  };
  /**
   * Answers a refusal; one of an authenticated tenant is recorded afterwards (never stored: anonymous
   * ones), on the invoice its body names when that is the tenant's, whatever check refused it.
   */
  const refuse = (
    request: FastifyRequest,
    reply: FastifyReply,
    httpStatus: number,
    error: string,
    payload: string | null = null,
  ) => {
    metrics.paymentNotifications.inc({ outcome: error, mode: modeOf(request) });
    request.log.warn({ ...loggableFields(request.body), reason: error }, 'payment notification rejected');
    if (request.partnerTenant) {
      refusals.record({
        tenantId: request.partnerTenant.id,
        mode: request.partnerMode,
        httpStatus,
        error,
        requestId: request.id,
        invoiceId: namedInvoiceId(request.body),
        payload,
      });
    }
    return reply.code(httpStatus).send({ error });
  };

  app.decorateRequest('partnerTenant', null as never);

  // Errors of this scope (body parser included) in the callback's own body, never the envelope:
  // a refusal is logged, counted and recorded as the rule's are; nothing was stored on a 5xx, and
  // the partner retries the same notification later.
  app.setErrorHandler((error, request, reply) => {
    const { httpStatus, error: message } = callbackAnswer(reportedError(error, request, reply));
    if (httpStatus >= 500) return reply.code(httpStatus).send({ error: message });
    return refuse(request, reply, httpStatus, message);
  });

  // Other methods on the callback's path answer in its body too (the plugin owns the prefix).
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0].replace(/\/+$/, '');
    const error = new AppError(path === PAYMENT_CALLBACK_PREFIX ? ErrorCode.METHOD_NOT_ALLOWED : ErrorCode.NOT_FOUND);
    if (error.code === ErrorCode.METHOD_NOT_ALLOWED) reply.header('allow', 'POST');
    const { httpStatus, error: message } = callbackAnswer(error);
    return reply.code(httpStatus).send({ error: message });
  });

  // A refused key: the bodies are fixed (DECISIONS §4), so what to fix goes in the challenge,
  // named after the header the key goes in.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (reply.statusCode === 401) {
      reply.header('www-authenticate', challenge('X-API-KEY', credentialHint('callback', request.headers)));
    }
    done(null, payload);
  });

  // Step 1 comes before the body is even read: a request without a valid key learns nothing else.
  app.addHook('onRequest', authenticator(limits, partnerApiKeyCheck(context)));

  app.post(
    '/',
    {
      // Documented as the spec writes it, with the slash; the router takes it without one too.
      prefixTrailingSlash: 'slash',
      config: { losslessJsonNumbers: true },
      // parseNotification validates the body, in the documented order with the documented
      // messages; the schema below only documents it, so Ajv neither rejects nor coerces anything.
      validatorCompiler: () => () => true,
      schema: {
        operationId: 'notifyPayment',
        tags: ['payments'],
        summary: 'Payment callback: the partner reports a payment outcome',
        description:
          'Authenticated with `X-API-KEY: <partner API key>` (not `Authorization`). Answers `{"status": ...}` ' +
          'or `{"error": "<message>"}`, without the envelope. Checks run in this order and the first failure ' +
          'answers: key, JSON body, required fields (`Missing <field>` / `Invalid <field>`), invoice, tenant, ' +
          'gateway, amount, currency.',
        security: [{ PartnerApiKey: [] }],
        body: NotificationBody,
        response: withRateLimitHeaders({
          200: Accepted,
          400: errorResponse(
            400,
            '`Invalid JSON body`, `Missing <field>`, `Invalid <field>`, `Gateway mismatch`, `Amount mismatch` or `Currency mismatch`',
          ),
          401: {
            ...errorResponse(
              401,
              '`Missing API key` or `Unauthorized` (invalid key or inactive tenant); `WWW-Authenticate: X-API-KEY` ' +
                'with an `error_description` saying what to check',
            ),
            headers: challengeHeader(
              '`X-API-KEY error_description="<what to check>"`: the header the key goes in, and a hint',
            ),
          },
          403: errorResponse(403, '`Forbidden`: the invoice belongs to another tenant'),
          404: errorResponse(404, '`Invoice not found`'),
          413: errorResponse(413, `\`Payload too large\`: body over ${BODY_LIMIT_TEXT}`),
          429: {
            ...errorResponse(429, '`Too many requests`: over the rate limit; retry after `Retry-After` seconds'),
            headers: retryAfterHeader,
          },
          503: {
            ...errorResponse(
              503,
              '`Service unavailable`: the database is unavailable (restarting, unreachable, out of space); nothing ' +
                'was stored; retry the same notification after `Retry-After` seconds',
            ),
            headers: retryAfterHeader,
          },
        }),
      },
    },
    async (request, reply) => {
      const body: unknown = request.body;
      // The lossless parse re-stringified: each number keeps the digits it was sent with.
      const payloadJson = body === undefined ? 'null' : (stringify(body) ?? 'null');
      const result = await processNotification(store, {
        tenant: request.partnerTenant,
        mode: request.partnerMode,
        body,
        payloadJson,
        requestId: request.id,
      });
      return answer(request, reply, result, payloadJson);
    },
  );
};
