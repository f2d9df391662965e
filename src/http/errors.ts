// Turns anything a request can throw into the one error model (AppError), and answers it with the
// renderer of the host (or of the part of a host) that received it: the one error handler
// (`renderErrorsWith`), which the not-found handlers and refusals reach by throwing. Only this file
// knows Fastify's own error codes.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { unavailability } from '../db/errors.js';
import { AppError, ErrorCode, FIELD_REQUIRED, type FieldError, invalid } from '../errors.js';

type SchemaError = NonNullable<FastifyError['validation']>[number];

const LOCATION: Record<string, FieldError['location']> = {
  body: 'body',
  querystring: 'query',
  params: 'path',
  headers: 'header',
};

function fieldOf(error: SchemaError): string {
  const path = error.instancePath
    .split('/')
    .filter(Boolean)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
  const params = error.params as Record<string, unknown>;
  const child = params.missingProperty ?? params.additionalProperty;
  if (typeof child === 'string') path.push(child);
  return path.join('.') || '(root)';
}

function messageOf(error: SchemaError): string {
  const params = error.params as Record<string, unknown>;
  if (error.keyword === 'required') return FIELD_REQUIRED;
  if (error.keyword === 'additionalProperties') return 'is not a known field';
  if (error.keyword === 'enum' && Array.isArray(params.allowedValues)) {
    return `must be one of ${params.allowedValues.join(', ')}`;
  }
  return error.message ?? 'is invalid';
}

/**
 * The field errors of a schema validation failure, one per field, in schema order. A field that
 * must be one of a few values (a union of constants: one error per value) says which.
 */
export function schemaFieldErrors(error: FastifyError): FieldError[] {
  const location = LOCATION[error.validationContext ?? 'body'] ?? 'body';
  const details = new Map<string, FieldError>();
  const allowed = new Map<string, unknown[]>();
  for (const item of error.validation ?? []) {
    const field = fieldOf(item);
    if (item.keyword === 'const') {
      allowed.set(field, [...(allowed.get(field) ?? []), (item.params as { allowedValue?: unknown }).allowedValue]);
    }
    if (!details.has(field)) details.set(field, { field, message: messageOf(item), location });
  }
  for (const [field, values] of allowed) {
    details.set(field, { field, message: `must be one of ${values.join(', ')}`, location });
  }
  return [...details.values()];
}

/** Seconds a client is asked to wait (`Retry-After`) when the database is unavailable. */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 1;

export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  // The database away or out of space: a 503 the client may retry, never a 500.
  if (unavailability(error)) return new AppError(ErrorCode.SERVICE_UNAVAILABLE);
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) return invalid(schemaFieldErrors(fastifyError));
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new AppError(ErrorCode.INVALID_JSON);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError(ErrorCode.PAYLOAD_TOO_LARGE);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError(ErrorCode.UNSUPPORTED_MEDIA_TYPE);
  }
  if (fastifyError.statusCode === 413) return new AppError(ErrorCode.PAYLOAD_TOO_LARGE);
  if (fastifyError.statusCode === 415) return new AppError(ErrorCode.UNSUPPORTED_MEDIA_TYPE);
  if (fastifyError.statusCode === 400) return new AppError(ErrorCode.VALIDATION_ERROR, 'Malformed request.');
  return new AppError(ErrorCode.INTERNAL_ERROR);
}

/**
 * The AppError a host renders for `error`, after logging what needs an operator: a bug in full,
 * an unavailable database as one line of its reason (never the statement or its parameters).
 * A 503 tells the client when to retry.
 */
export function reportedError(error: unknown, request: FastifyRequest, reply: FastifyReply): AppError {
  const appError = toAppError(error);
  if (appError.code === ErrorCode.INTERNAL_ERROR) request.log.error({ err: error }, 'unexpected error');
  if (appError.code === ErrorCode.SERVICE_UNAVAILABLE) {
    request.log.warn({ reason: unavailability(error)?.message }, 'database unavailable: answered 503');
    reply.header('retry-after', String(UNAVAILABLE_RETRY_AFTER_SECONDS));
  }
  return appError;
}

/** How a host, or a part of one with its own body (the payment callback), says an AppError in JSON. */
export interface ErrorRenderer {
  /** The documented body of `error`; `thrown` is what was thrown (a schema failure keeps its keywords). */
  body(error: AppError, thrown?: unknown): unknown;
  /** The status, when not the error's own. */
  status?(error: AppError): number;
}

/** A scope's whole answer to an AppError, when more than a JSON body is said: a page, a redirect, a recorded refusal. */
export type ErrorAnswer = (
  error: AppError,
  request: FastifyRequest,
  reply: FastifyReply,
) => FastifyReply | Promise<FastifyReply>;

const SCOPE_ERRORS = Symbol('scopeErrors');
type WithScopeErrors = { [SCOPE_ERRORS]?: ErrorRenderer | ErrorAnswer };

/**
 * The one error handler of a host: whatever is thrown, reported, then answered by the renderer of
 * the scope that owns the route or the not-found handler (`renderScopeErrorsWith`), else the host's.
 * Not-found handlers and refusals throw their AppError to it.
 */
export function renderErrorsWith(app: FastifyInstance, renderer: ErrorRenderer): void {
  app.setErrorHandler((error, request, reply) => {
    const scopeErrors = (request.server as WithScopeErrors)[SCOPE_ERRORS] ?? renderer;
    const appError = reportedError(error, request, reply);
    if (typeof scopeErrors === 'function') return scopeErrors(appError, request, reply);
    return reply.code(scopeErrors.status?.(appError) ?? appError.statusCode).send(scopeErrors.body(appError, error));
  });
}

/**
 * Errors of `scope` and of the scopes it registers are answered by `errors`, not the host's
 * renderer: kept on the instance, which its children inherit, and read by the host's one handler.
 */
export function renderScopeErrorsWith(scope: FastifyInstance, errors: ErrorRenderer | ErrorAnswer): void {
  (scope as WithScopeErrors)[SCOPE_ERRORS] = errors;
}
