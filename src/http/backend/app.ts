// The backend host: `/v1/` countries and cities for backend partner keys, paged lists without
// the envelope, errors as `{"detail": ...}` (DECISIONS §5), flag images, and its OpenAPI document.
import type { FastifyBaseLogger, FastifyError } from 'fastify';
import type { AppContext } from '../../context.js';
import { AppError, ErrorCode } from '../../errors.js';
import { DOCS_PREFIX, publicDocs } from '../docs/pages.js';
import { type ErrorRenderer, schemaFieldErrors } from '../errors.js';
import { refuseOtherMethods, trackAllowedMethods } from '../host/allowed-methods.js';
import { createHostApp, type HostApp } from '../host.js';
import { rateLimitGuard } from '../rate-limit.js';
import { mountScope, registerDocument } from '../route.js';
import { guardBackendLists, methodNotAllowed } from './geo.js';
import { BACKEND_PREFIX, backendDocument, FLAG_SCOPE, LIST_SCOPE } from './openapi.js';

/** Pydantic-style error types for the schema keywords a query can fail. */
const ERROR_TYPES: Record<string, string> = {
  'type:integer': 'int_parsing',
  'type:number': 'float_parsing',
  'type:boolean': 'bool_parsing',
  'type:string': 'string_type',
  minimum: 'greater_than_equal',
  maximum: 'less_than_equal',
  minLength: 'string_too_short',
  maxLength: 'string_too_long',
  pattern: 'string_pattern_mismatch',
  'format:uuid': 'uuid_parsing',
  enum: 'enum',
  required: 'missing',
};

function errorType(error: FastifyError, field: string): string {
  const item = error.validation?.find((candidate) => candidate.instancePath === `/${field.split('.').join('/')}`);
  if (!item) return 'value_error';
  const params = item.params as Record<string, unknown>;
  const qualifier = item.keyword === 'type' ? params.type : item.keyword === 'format' ? params.format : undefined;
  return ERROR_TYPES[qualifier === undefined ? item.keyword : `${item.keyword}:${qualifier}`] ?? 'value_error';
}

/** `[{loc: ["query", "<param>"], msg, type}]`, one entry per invalid parameter. */
function validationDetail(error: unknown, appError: AppError) {
  const fastifyError = error as FastifyError;
  const details = fastifyError.validation ? schemaFieldErrors(fastifyError) : (appError.details ?? []);
  return details.map((detail) => ({
    loc: [detail.location ?? 'query', ...detail.field.split('.')],
    msg: detail.message,
    type: fastifyError.validation ? errorType(fastifyError, detail.field) : 'value_error',
  }));
}

/** `{"detail": "<message>"}`; a validation failure 422 with one entry per invalid parameter. */
const backendErrors: ErrorRenderer = {
  body: (error, thrown) =>
    error.code === ErrorCode.VALIDATION_ERROR ? { detail: validationDetail(thrown, error) } : { detail: error.message },
  status: (error) => (error.code === ErrorCode.VALIDATION_ERROR ? 422 : error.statusCode),
};

export async function buildBackendApp(context: AppContext, logger: FastifyBaseLogger): Promise<HostApp> {
  const limits = rateLimitGuard(context, 'backend');
  const app = createHostApp(context, {
    listener: 'backend',
    logger,
    errors: backendErrors,
  });

  const allowedMethods = trackAllowedMethods(app);
  await registerDocument(
    app,
    backendDocument(() => context.publicUrls.backend),
  );
  await app.register(publicDocs, {
    prefix: DOCS_PREFIX,
    host: 'backend host',
    document: () => app.swagger(),
    documentPath: `${BACKEND_PREFIX}/openapi.json`,
  });
  app.get(`${BACKEND_PREFIX}/docs`, { schema: { hide: true } }, (_request, reply) => reply.redirect(`${DOCS_PREFIX}/`));

  app.setNotFoundHandler((request, reply) => {
    refuseOtherMethods(allowedMethods, request, reply, methodNotAllowed(request.method));
    throw new AppError(ErrorCode.NOT_FOUND);
  });

  await mountScope(app, FLAG_SCOPE, context);
  await mountScope(app, LIST_SCOPE, context, guardBackendLists(context, limits));
  return app;
}
