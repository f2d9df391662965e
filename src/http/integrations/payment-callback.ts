// `POST /api/v1/payments/notify/`: the partner's payment backend reports an outcome (spec 4.6).
// Outside the `/api/v1` SSO scope: its own key (`X-API-KEY`), its own bodies (`{status}` /
// `{error}`, never the envelope), its own error handler. The checks live in payments/callback.ts.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { stringify } from 'lossless-json';
import type { AppContext } from '../../context.js';
import { AppError, ErrorCode } from '../../errors.js';
import {
  type CallbackRejection,
  type CallbackResult,
  NotificationStore,
  processNotification,
  RefusalRecorder,
} from '../../payments/index.js';
import { type Mode, resolvePartnerApiKey, type TenantCredential, type TenantRow } from '../../tenants/index.js';
import { authenticator, type CredentialCheck } from '../authentication.js';
import { challenge, challengeHeader, credentialHint } from '../credential-hints.js';
import { reportedError, toAppError } from '../errors.js';
import { BODY_LIMIT_TEXT } from '../host.js';
import { EXAMPLE_UUID, namedExamples } from '../openapi.js';
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
      description: '`duplicate`: this (transaction_id, status, gateway) was already received; nothing changed',
    }),
  },
  { examples: [{ status: 'success' }, { status: 'duplicate' }] },
);
const ErrorBody = Type.Object({ error: Type.String() });

const MISSING_API_KEY = 'Missing API key';
const UNAUTHORIZED = 'Unauthorized';

/** One of each refusal, to document the exact bodies answered. */
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
const TOO_LARGE = 'Payload too large';
const TOO_MANY = 'Too many requests';
const UNAVAILABLE = 'Service unavailable';

/** The callback's body for a request refused before it was routed (src/http/host.ts). */
const REFUSED_BEFORE_ROUTING: Partial<Record<AppError['code'], string>> = {
  MALFORMED_REQUEST: 'Malformed request',
  HEADERS_TOO_LARGE: 'Request header fields too large',
  REQUEST_TIMEOUT: 'Request timeout',
};

export function callbackErrorBody(error: AppError): { error: string } {
  return { error: REFUSED_BEFORE_ROUTING[error.code] ?? error.message };
}

/** A documented error status of the callback, with every body it may carry as an example. */
function errorResponse(httpStatus: CallbackError, description: string) {
  const messages = [
    { httpStatus: 401, error: MISSING_API_KEY },
    { httpStatus: 401, error: UNAUTHORIZED },
    ...EVERY_REFUSAL.map(refusal),
    { httpStatus: 413, error: TOO_LARGE },
    { httpStatus: 429, error: TOO_MANY },
    { httpStatus: 503, error: UNAVAILABLE },
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

type CallbackError = 400 | 401 | 403 | 404 | 413 | 429 | 503;

/** Each refusal's status and exact message (DECISIONS §4). */
function refusal(rejection: CallbackRejection): { httpStatus: CallbackError; error: string } {
  switch (rejection.reason) {
    case 'invalid_json':
      return { httpStatus: 400, error: 'Invalid JSON body' };
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

/** The body of a request refused before our handler ran (bad JSON, too large, rate limited...). */
function earlyFailure(error: FastifyError): { httpStatus: CallbackError; error: string } | null {
  const appError = toAppError(error);
  // Step 1's refusals carry their exact message (`partnerApiKeyCheck`).
  if (appError.code === 'UNAUTHORIZED') return { httpStatus: 401, error: appError.message };
  if (appError.code === 'RATE_LIMITED') return { httpStatus: 429, error: TOO_MANY };
  if (appError.code === 'PAYLOAD_TOO_LARGE') return { httpStatus: 413, error: TOO_LARGE };
  if (['INVALID_JSON', 'UNSUPPORTED_MEDIA_TYPE', 'VALIDATION_ERROR'].includes(appError.code)) {
    return { httpStatus: 400, error: 'Invalid JSON body' };
  }
  return null;
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
      metrics.paymentNotifications.inc({ outcome: result.accepted, mode: modeOf(request) });
      if (result.unknownStatus) metrics.unknownStatusNotifications.inc({ mode: modeOf(request) });
      return reply.code(200).send({ status: result.accepted });
    }
    const { httpStatus, error } = refusal(result.rejected);
    return refuse(request, reply, httpStatus, error, { invoiceId: result.invoiceId ?? null, payload });
  };
  /** Answers a refusal; one of an authenticated tenant is recorded afterwards (never stored: anonymous ones). */
  const refuse = (
    request: FastifyRequest,
    reply: FastifyReply,
    httpStatus: CallbackError,
    error: string,
    record: { invoiceId: string | null; payload: string | null } = { invoiceId: null, payload: null },
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
        ...record,
      });
    }
    return reply.code(httpStatus).send({ error });
  };

  app.decorateRequest('partnerTenant', null as never);

  // Errors of this scope (body parser included) in the callback's own body, never the envelope.
  app.setErrorHandler((error, request, reply) => {
    const failure = earlyFailure(error as FastifyError);
    if (failure) return refuse(request, reply, failure.httpStatus, failure.error);
    // Nothing was stored: the partner retries the same notification later.
    if (reportedError(error, request, reply).code === 'SERVICE_UNAVAILABLE') {
      return reply.code(503).send({ error: UNAVAILABLE });
    }
    return reply.code(500).send({ error: 'Internal server error' });
  });

  // Other methods on the callback's path answer in its body too (the plugin owns the prefix).
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0].replace(/\/+$/, '');
    if (path !== PAYMENT_CALLBACK_PREFIX) return reply.code(404).send({ error: 'Not found' });
    return reply.code(405).header('allow', 'POST').send({ error: 'Method not allowed' });
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
        response: {
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
          429: errorResponse(429, '`Too many requests`: over the rate limit; retry after `Retry-After` seconds'),
          503: errorResponse(
            503,
            '`Service unavailable`: the database is unavailable (restarting, unreachable, out of space); nothing ' +
              'was stored; retry the same notification after `Retry-After` seconds',
          ),
        },
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
