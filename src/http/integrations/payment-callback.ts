// `POST /api/v1/payments/notify/`: the partner's payment backend reports an outcome (spec 4.6).
// Outside the `/api/v1` SSO scope: its own key (`X-API-KEY`), its own bodies (`{status}` /
// `{error}`, never the envelope: its renderer below). The checks live in payments/callback.ts and
// payments/notification.ts (the body's schema).
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { stringify } from 'lossless-json';
import type { AppContext } from '../../context.js';
import { AppError, ErrorCode, FIELD_REQUIRED } from '../../errors.js';
import {
  BODY_REFUSALS,
  CALLBACK_REFUSALS,
  type CallbackResult,
  NotificationBody,
  NotificationStore,
  namedInvoiceId,
  notificationBodyRefusal,
  processNotification,
  RefusalRecorder,
  readNotification,
} from '../../payments/index.js';
import { type Mode, resolvePartnerApiKey, type TenantCredential, type TenantRow } from '../../tenants/index.js';
import { authenticator, type CredentialCheck } from '../authentication.js';
import { challenge, challengeHeader, credentialHint } from '../credential-hints.js';
import { type ErrorRenderer, renderScopeErrorsWith } from '../errors.js';
import { BODY_LIMIT_TEXT, type HostApp } from '../host.js';
import { namedExamples, retryAfterHeader, withCredentialAnswerHeaders } from '../openapi.js';
import type { RateLimitGuard } from '../rate-limit.js';
import { route } from '../route.js';

export const PAYMENT_CALLBACK_PREFIX = '/api/v1/payments/notify';
export const PAYMENT_CALLBACK_PATH = `${PAYMENT_CALLBACK_PREFIX}/`;

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
  /** The exact message, or how to say it from the field the error names. */
  error: string | ((error: AppError) => string);
}

const capitalised = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** The field the error names first (its details'), if any. */
const fieldOf = (error: AppError): string | undefined => error.details?.[0]?.field;

/**
 * The callback's renderer table: its status and exact message (DECISIONS §4) for each AppError it
 * answers, from the rule (payments/callback.ts, the body's schema), its own scope (the
 * authenticator, the body parser, the rate limits, the database), its not-found handler and the
 * host's refusals before routing. Anything else is a 500.
 */
const CALLBACK_ANSWERS: Partial<Record<ErrorCode, CallbackAnswer>> = {
  // Step 1's two messages are the authenticator's (`partnerApiKeyCheck`).
  UNAUTHORIZED: { httpStatus: 401, error: (error) => error.message },
  INVALID_JSON: { httpStatus: 400, error: INVALID_JSON_BODY },
  UNSUPPORTED_MEDIA_TYPE: { httpStatus: 400, error: INVALID_JSON_BODY },
  VALIDATION_ERROR: {
    httpStatus: 400,
    error: (error) => {
      const [first] = error.details ?? [];
      if (!first) return INVALID_JSON_BODY;
      return first.message === FIELD_REQUIRED ? `Missing ${first.field}` : `Invalid ${first.field}`;
    },
  },
  NOT_FOUND: {
    httpStatus: 404,
    error: (error) => (fieldOf(error) === 'invoice_id' ? 'Invoice not found' : 'Not found'),
  },
  FORBIDDEN: { httpStatus: 403, error: 'Forbidden' },
  MISMATCH: { httpStatus: 400, error: (error) => `${capitalised(fieldOf(error) ?? 'field')} mismatch` },
  PAYLOAD_TOO_LARGE: { httpStatus: 413, error: 'Payload too large' },
  RATE_LIMITED: { httpStatus: 429, error: 'Too many requests' },
  SERVICE_UNAVAILABLE: { httpStatus: 503, error: 'Service unavailable' },
  METHOD_NOT_ALLOWED: { httpStatus: 405, error: 'Method not allowed' },
  MALFORMED_REQUEST: { httpStatus: 400, error: 'Malformed request' },
  HEADERS_TOO_LARGE: { httpStatus: 431, error: 'Request header fields too large' },
  REQUEST_TIMEOUT: { httpStatus: 408, error: 'Request timeout' },
};

function callbackAnswer(appError: AppError): { httpStatus: number; error: string } {
  const answer = CALLBACK_ANSWERS[appError.code];
  if (!answer) return INTERNAL;
  return {
    httpStatus: answer.httpStatus,
    error: typeof answer.error === 'string' ? answer.error : answer.error(appError),
  };
}

/** How the callback says an AppError: `{"error": "<exact message>"}`. */
export const callbackErrors: ErrorRenderer = {
  body: (error) => ({ error: callbackAnswer(error).error }),
  status: (error) => callbackAnswer(error).httpStatus,
};

/** One of each refusal of steps 2 to 8 and of the scope, to document the exact bodies answered. */
const EVERY_REFUSAL: AppError[] = [
  new AppError(ErrorCode.UNAUTHORIZED, MISSING_API_KEY),
  new AppError(ErrorCode.UNAUTHORIZED, UNAUTHORIZED),
  BODY_REFUSALS.invalidJson(),
  BODY_REFUSALS.missing('transaction_id'),
  BODY_REFUSALS.invalid('amount'),
  ...Object.values(CALLBACK_REFUSALS).map((refusal) => refusal()),
  new AppError(ErrorCode.PAYLOAD_TOO_LARGE),
  new AppError(ErrorCode.RATE_LIMITED),
  new AppError(ErrorCode.SERVICE_UNAVAILABLE),
];

/** A documented error status of the callback, with every body it may carry as an example. */
function errorResponse(httpStatus: CallbackStatus, description: string) {
  const messages = EVERY_REFUSAL.map(callbackAnswer).filter((candidate) => candidate.httpStatus === httpStatus);
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

/** The lossless parse re-stringified: each number keeps the digits it was sent with. */
const payloadJsonOf = (body: unknown): string => stringify(body) ?? 'null';

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

const modeOf = (request: FastifyRequest) => (request.partnerTenant ? request.partnerMode : 'none');

/** The answer to a notification taken (stored, duplicate or not applied), counted. */
function accept({ metrics }: AppContext, request: FastifyRequest, reply: FastifyReply, result: CallbackResult) {
  const mode = modeOf(request);
  metrics.paymentNotifications.inc({ outcome: result.accepted, mode });
  if (result.notAppliedReason === 'unknown_status') metrics.unknownStatusNotifications.inc({ mode });
  if (result.notAppliedReason === 'possible_double_charge') metrics.possibleDoubleCharges.inc({ mode });
  return reply.code(200).send({ status: result.accepted });
}

/** The hooks of the callback's scope (mounted at PAYMENT_CALLBACK_PREFIX): its errors, its other methods, its key. */
export const guardPaymentCallback = (context: AppContext, limits: RateLimitGuard) => (app: HostApp) => {
  const { metrics } = context;
  const refusals = new RefusalRecorder(context.db, {
    dropped: () => metrics.refusedNotificationRecords.inc({ result: 'dropped' }),
    failed: (error, count) => {
      metrics.refusedNotificationRecords.inc({ result: 'failed' }, count);
      app.log.warn({ err: error, count }, 'refused payment notifications not recorded');
    },
  });

  app.decorateRequest('partnerTenant', null as never);

  // Errors of this scope (the rule's refusals, the body's schema and parser included) in the
  // callback's own body, never the envelope. A refusal is logged and counted; one of an
  // authenticated tenant is recorded afterwards (never stored: anonymous ones), with the body when
  // one was read, on the invoice it names when that is the tenant's, whatever check refused it.
  // Nothing was stored on a 5xx, and the partner retries the same notification later; a wrong
  // path or method is no notification.
  renderScopeErrorsWith(app, (appError, request, reply) => {
    const { httpStatus, error } = callbackAnswer(appError);
    if (httpStatus >= 500 || request.is404) return reply.code(httpStatus).send({ error });
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
        payload: request.body === undefined ? null : payloadJsonOf(request.body),
      });
    }
    return reply.code(httpStatus).send({ error });
  });

  // Other methods on the callback's path answer in its body too (the scope owns the prefix).
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0].replace(/\/+$/, '');
    if (path !== PAYMENT_CALLBACK_PREFIX) throw new AppError(ErrorCode.NOT_FOUND);
    reply.header('allow', 'POST');
    throw new AppError(ErrorCode.METHOD_NOT_ALLOWED);
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
};

export const paymentCallbackRoutes = [
  route({
    method: 'POST',
    url: '/',
    // Documented as the spec writes it, with the slash; the router takes it without one too.
    prefixTrailingSlash: 'slash',
    config: { losslessJsonNumbers: true },
    // Steps 2 and 3: the body's schema, checked by the rule's own reading of it, in the documented
    // order with the documented messages (not Ajv's order, and numbers stay lossless).
    validatorCompiler: () => (body) => {
      const refusal = notificationBodyRefusal(body);
      return refusal ? { error: refusal } : true;
    },
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
      response: withCredentialAnswerHeaders({
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
    handler: (context) => {
      const store = new NotificationStore(context.database);
      return async (request, reply) => {
        const result = await processNotification(store, {
          tenant: request.partnerTenant,
          mode: request.partnerMode,
          notification: readNotification(request.body),
          payloadJson: payloadJsonOf(request.body),
          requestId: request.id,
        });
        return accept(context, request, reply, result);
      };
    },
  }),
];
