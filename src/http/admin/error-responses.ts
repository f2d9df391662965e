// The admin API's error body, `{"error": {"code", "message", "details"?}}`, and its documented
// error responses: each with the exact body the handler answers, as an OpenAPI example.
import { Type } from '@sinclair/typebox';
import { AppError, ErrorCode, invalid, notFound } from '../../errors.js';
import { requiredRole, roleBelow, roleRefusal } from '../../operators/index.js';
import { BODY_LIMIT_TEXT } from '../host.js';
import { type DocumentedRoute, namedExamples, readsBody, retryAfterHeader } from '../openapi.js';
import { ErrorCodeSchema, FieldErrorDetails } from '../schemas.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * What an admin route's path names (or, for one that acts for a tenant, its body or query's
     * tenant): the resource its documented 404 says is not found. None: the route answers no 404.
     */
    resource?: string;
  }
}

export function renderAdminError(error: AppError) {
  return { error: { code: error.code, message: error.message, ...(error.details && { details: error.details }) } };
}

const AdminError = Type.Object(
  {
    error: Type.Object({
      code: ErrorCodeSchema,
      message: Type.String(),
      details: Type.Optional(FieldErrorDetails),
    }),
  },
  { title: 'Admin error' },
);

export function adminErrorResponse(description: string, errors: AppError[]) {
  return {
    description,
    content: {
      'application/json': {
        schema: AdminError,
        examples: namedExamples(errors.map((error) => [error.code, renderAdminError(error)])),
      },
    },
  };
}

/** A 409 for a route that can conflict: each case by name, with its exact message. */
export function conflictResponse(cases: Record<string, string>) {
  const examples = Object.entries(cases).map(([name, message]) => [
    name,
    renderAdminError(new AppError(ErrorCode.CONFLICT, message)),
  ]) as [string, unknown][];
  return {
    description: `CONFLICT: ${Object.keys(cases).join('; ')}`,
    content: { 'application/json': { schema: AdminError, examples: namedExamples(examples) } },
  };
}

/** The 403 of a route that needs more than the least role: the refusal of the role just below it. */
function roleRefusalResponse(route: DocumentedRoute) {
  const [method] = [route.method].flat();
  const needed = route.config?.operatorRole ?? requiredRole(method);
  const refused = roleBelow(needed);
  return refused && { 403: adminErrorResponse(`FORBIDDEN: needs the ${needed} role`, [roleRefusal(refused, needed)]) };
}

/**
 * The error responses of an admin route, from what it takes: every route can be refused its
 * token, rate limited or fail; one that changes something can be refused the operator's role; one
 * with input can be invalid; one that reads a body can be refused its size or media type; one
 * naming a resource can miss it.
 */
export function adminErrorResponses(route: DocumentedRoute) {
  const schema = route.schema ?? {};
  const hasBody = schema.body !== undefined;
  const bodyRead = readsBody(route);
  const takesInput = bodyRead || schema.params !== undefined || schema.querystring !== undefined;
  const missing = route.config?.resource;
  const invalidInput = hasBody
    ? invalid([{ field: 'name', message: 'must NOT have fewer than 1 characters', location: 'body' }])
    : invalid([{ field: 'id', message: 'must match format "uuid"', location: 'path' }]);
  return {
    ...(takesInput && {
      400: adminErrorResponse('VALIDATION_ERROR (one entry per invalid field) or INVALID_JSON', [
        invalidInput,
        ...(bodyRead ? [new AppError(ErrorCode.INVALID_JSON)] : []),
      ]),
    }),
    401: adminErrorResponse('UNAUTHORIZED: missing or wrong `Authorization: Bearer <ADMIN_TOKEN>`', [
      new AppError(ErrorCode.UNAUTHORIZED),
    ]),
    ...roleRefusalResponse(route),
    421: adminErrorResponse('MISDIRECTED_REQUEST: the `Host` header names none of ADMIN_ALLOWED_HOSTS', [
      new AppError(ErrorCode.MISDIRECTED_REQUEST),
    ]),
    ...(missing && { 404: adminErrorResponse('NOT_FOUND', [notFound(missing)]) }),
    ...(bodyRead && {
      413: adminErrorResponse(`PAYLOAD_TOO_LARGE: body over ${BODY_LIMIT_TEXT}`, [
        new AppError(ErrorCode.PAYLOAD_TOO_LARGE),
      ]),
      415: adminErrorResponse('UNSUPPORTED_MEDIA_TYPE: the body is not `application/json`', [
        new AppError(ErrorCode.UNSUPPORTED_MEDIA_TYPE),
      ]),
    }),
    429: {
      ...adminErrorResponse('RATE_LIMITED: too many failed authentications from this address', [
        new AppError(ErrorCode.RATE_LIMITED),
      ]),
      headers: retryAfterHeader,
    },
    500: adminErrorResponse('INTERNAL_ERROR', [new AppError(ErrorCode.INTERNAL_ERROR)]),
    503: {
      ...adminErrorResponse('SERVICE_UNAVAILABLE: the database is unavailable; retry after `Retry-After` seconds', [
        new AppError(ErrorCode.SERVICE_UNAVAILABLE),
      ]),
      headers: retryAfterHeader,
    },
  };
}
