// The envelope of spec 2.1, around every `/api/v1/` response: `{success, message, data, error}`.
// Route schemas are built with `Envelope(dataSchema)` and the shared error responses here, so the
// OpenAPI document and the wire agree.
import { type TSchema, Type } from '@sinclair/typebox';
import { AppError, ErrorCode, invalid, notFound } from '../../errors.js';
import { isUuid } from '../../text.js';
import { challengeHeader, credentialHint } from '../credential-hints.js';
import { BODY_LIMIT_TEXT } from '../host.js';
import { allowHeader, type DocumentedRoute, namedExamples, readsBody, retryAfterHeader } from '../openapi.js';
import { ErrorCodeSchema, FieldErrorDetails } from '../schemas.js';

/** A success envelope around `data`. */
export function ok<T>(message: string, data: T) {
  return { success: true as const, message, data, error: null };
}

export function renderEnvelopeError(error: AppError) {
  return {
    success: false as const,
    message: error.message,
    data: null,
    error: {
      code: error.code,
      ...(error.details && { details: error.details }),
      ...(error.hint && { hint: error.hint }),
    },
  };
}

/** The response schema of a success envelope carrying `dataSchema`. */
export const Envelope = <T extends TSchema>(dataSchema: T) =>
  Type.Object({
    success: Type.Literal(true),
    message: Type.String(),
    data: dataSchema,
    error: Type.Null(),
  });

export const ErrorEnvelope = Type.Object(
  {
    success: Type.Literal(false),
    message: Type.String({ description: 'Human-readable; names the field on a validation error' }),
    data: Type.Null(),
    error: Type.Object({
      code: ErrorCodeSchema,
      details: Type.Optional(FieldErrorDetails),
      hint: Type.Optional(
        Type.String({
          description:
            'What to check or fix, when the request shows it (e.g. a partner API key sent where the SSO secret ' +
            'belongs). For people: match on `code`, never on this text.',
        }),
      ),
    }),
  },
  { $id: 'ErrorEnvelope', title: 'Error envelope' },
);

/** A documented error response: the envelope, with the exact body of each error as an example. */
export const errorResponse = (description: string, errors: AppError[]) => ({
  description,
  content: {
    'application/json': {
      schema: Type.Ref(ErrorEnvelope),
      examples: namedExamples(errors.map((error) => [error.code, renderEnvelopeError(error)])),
    },
  },
});

/** The error responses every `/api/v1/` route may give. */
const ERROR_RESPONSES = {
  400: errorResponse('VALIDATION_ERROR, TENANT_NOT_ALLOWED or INVALID_JSON', [
    invalid([{ field: 'language', message: 'must be one of en, ar', location: 'query' }]),
    new AppError(ErrorCode.TENANT_NOT_ALLOWED),
    new AppError(ErrorCode.INVALID_JSON),
  ]),
  401: {
    ...errorResponse(
      'UNAUTHORIZED: missing or invalid `Authorization: Api-Key <secret>`, or an inactive tenant; ' +
        '`WWW-Authenticate: Api-Key`, and `error.hint` says what to check',
      [
        new AppError(
          ErrorCode.UNAUTHORIZED,
          undefined,
          undefined,
          credentialHint('resources', { authorization: 'Bearer pis_sso_7Jq2mXc9R4tY1vB8nL6pZ0wE5sD3fG2hK9aQ4uI1oP' }),
        ),
      ],
    ),
    headers: challengeHeader('`Api-Key`: the scheme `Authorization` takes here'),
  },
  404: errorResponse('NOT_FOUND: no such resource for this tenant', [notFound('Trip')]),
  405: {
    ...errorResponse('METHOD_NOT_ALLOWED', [
      new AppError(ErrorCode.METHOD_NOT_ALLOWED, 'Method PUT is not allowed here.'),
    ]),
    headers: allowHeader,
  },
  413: errorResponse(`PAYLOAD_TOO_LARGE: body over ${BODY_LIMIT_TEXT}`, [new AppError(ErrorCode.PAYLOAD_TOO_LARGE)]),
  429: {
    ...errorResponse('RATE_LIMITED: over the rate limit; retry after `Retry-After` seconds', [
      new AppError(ErrorCode.RATE_LIMITED),
    ]),
    headers: retryAfterHeader,
  },
  500: errorResponse('INTERNAL_ERROR', [new AppError(ErrorCode.INTERNAL_ERROR)]),
  503: {
    ...errorResponse('SERVICE_UNAVAILABLE: the database is unavailable; retry after `Retry-After` seconds', [
      new AppError(ErrorCode.SERVICE_UNAVAILABLE),
    ]),
    headers: retryAfterHeader,
  },
};

/** The error responses of an `/api/v1/` route: those of every route, and a body's media type for one that reads a body. */
export const envelopeErrorResponses = (route: DocumentedRoute) => ({
  ...ERROR_RESPONSES,
  ...(readsBody(route) && {
    415: errorResponse('UNSUPPORTED_MEDIA_TYPE: the body is not `application/json`', [
      new AppError(ErrorCode.UNSUPPORTED_MEDIA_TYPE),
    ]),
  }),
});

/** Path id of a resource: any text is accepted by the schema, since a malformed id is a 404 here, not a 400. */
export const ResourceIdParams = Type.Object({ id: Type.String({ description: 'UUID; anything else is a 404' }) });

/** The id itself when it is a UUID; otherwise the 404 of `what`, as for an unknown id. */
export function resourceId(id: string, what: string): string {
  if (!isUuid(id)) throw notFound(what);
  return id;
}
