// The one error model. Domain modules throw these; each host has one handler that turns them into
// that host's documented body. Every code the service answers with is listed here.

export const ErrorCode = {
  UNAUTHORIZED: 'UNAUTHORIZED',
  FORBIDDEN: 'FORBIDDEN',
  TEST_MODE_ONLY: 'TEST_MODE_ONLY',
  VALIDATION_ERROR: 'VALIDATION_ERROR',
  MALFORMED_REQUEST: 'MALFORMED_REQUEST',
  TENANT_NOT_ALLOWED: 'TENANT_NOT_ALLOWED',
  NOT_FOUND: 'NOT_FOUND',
  CONFLICT: 'CONFLICT',
  MISMATCH: 'MISMATCH',
  METHOD_NOT_ALLOWED: 'METHOD_NOT_ALLOWED',
  INVALID_JSON: 'INVALID_JSON',
  PAYLOAD_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  UNSUPPORTED_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  RATE_LIMITED: 'RATE_LIMITED',
  MISDIRECTED_REQUEST: 'MISDIRECTED_REQUEST',
  HEADERS_TOO_LARGE: 'HEADERS_TOO_LARGE',
  REQUEST_TIMEOUT: 'REQUEST_TIMEOUT',
  INTERNAL_ERROR: 'INTERNAL_ERROR',
  BAD_GATEWAY: 'BAD_GATEWAY',
  SERVICE_UNAVAILABLE: 'SERVICE_UNAVAILABLE',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

const HTTP_STATUS: Record<ErrorCode, number> = {
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  TEST_MODE_ONLY: 403,
  VALIDATION_ERROR: 400,
  MALFORMED_REQUEST: 400,
  TENANT_NOT_ALLOWED: 400,
  NOT_FOUND: 404,
  CONFLICT: 409,
  MISMATCH: 400,
  METHOD_NOT_ALLOWED: 405,
  INVALID_JSON: 400,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  MISDIRECTED_REQUEST: 421,
  HEADERS_TOO_LARGE: 431,
  REQUEST_TIMEOUT: 408,
  INTERNAL_ERROR: 500,
  BAD_GATEWAY: 502,
  SERVICE_UNAVAILABLE: 503,
};

export const DEFAULT_MESSAGE: Record<ErrorCode, string> = {
  UNAUTHORIZED: 'Unauthorized.',
  FORBIDDEN: 'Forbidden.',
  TEST_MODE_ONLY: 'Test mode only: use your test SSO secret (pis_test_sso_...).',
  VALIDATION_ERROR: 'Invalid request.',
  MALFORMED_REQUEST: 'Malformed request: the request line or URL is not valid (for example a bad %-escape).',
  TENANT_NOT_ALLOWED: 'The tenant comes from the credential; do not send it in the path, query or body.',
  NOT_FOUND: 'Not found.',
  CONFLICT: 'Conflict.',
  MISMATCH: 'A field does not match what the request names.',
  METHOD_NOT_ALLOWED: 'Method not allowed.',
  INVALID_JSON: 'Request body is not valid JSON.',
  PAYLOAD_TOO_LARGE: 'Request body is too large.',
  UNSUPPORTED_MEDIA_TYPE: 'Request body must be application/json.',
  RATE_LIMITED: 'Too many requests.',
  MISDIRECTED_REQUEST: 'This listener does not answer for the host this request names (Host).',
  HEADERS_TOO_LARGE: 'Request header fields are too large.',
  REQUEST_TIMEOUT: 'The request did not arrive in time.',
  INTERNAL_ERROR: 'Internal server error.',
  BAD_GATEWAY: 'The host this request is relayed to cannot be reached.',
  SERVICE_UNAVAILABLE: 'Service temporarily unavailable; retry shortly.',
};

export interface FieldError {
  /** The field's name, dotted for nested fields (`travelers.adults`); `location` says where. */
  field: string;
  message: string;
  location?: 'body' | 'query' | 'path' | 'header';
}

export class AppError extends Error {
  /** A field, so that Fastify may read (and set) it when a route's validator answers with this error. */
  readonly statusCode: number;

  constructor(
    readonly code: ErrorCode,
    message: string = DEFAULT_MESSAGE[code],
    readonly details?: FieldError[],
    /** What to check or fix, when the request's shape tells (e.g. which credential goes where). */
    readonly hint?: string,
  ) {
    super(message);
    this.name = 'AppError';
    this.statusCode = HTTP_STATUS[code];
  }
}

export const notFound = (what: string) => new AppError(ErrorCode.NOT_FOUND, `${what} not found.`);
export const conflict = (message: string) => new AppError(ErrorCode.CONFLICT, message);

/** A validation failure naming the field(s): the message names the first. */
export function invalid(details: FieldError[]): AppError {
  const [first] = details;
  return new AppError(ErrorCode.VALIDATION_ERROR, `${first.field}: ${first.message}`, details);
}

export const invalidField = (field: string, message: string, location: FieldError['location'] = 'body') =>
  invalid([{ field, message, location }]);

/** The message of a field that is not there, which renderers may say their own way (the callback's `Missing <field>`). */
export const FIELD_REQUIRED = 'is required';

export const missingField = (field: string, location: FieldError['location'] = 'body') =>
  invalidField(field, FIELD_REQUIRED, location);

/** A field that contradicts the object the request names (the invoice a payment callback reports on). */
export const mismatch = (field: string, message: string) =>
  new AppError(ErrorCode.MISMATCH, `${field}: ${message}`, [{ field, message, location: 'body' }]);
