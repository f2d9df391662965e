// The backend host: `/v1/` countries and cities for backend partner keys, paged lists without
// the envelope, errors as `{"detail": ...}` (DECISIONS §5), flag images, and its OpenAPI document.
import swagger from '@fastify/swagger';
import type { FastifyBaseLogger, FastifyError } from 'fastify';
import type { AppContext } from '../../context.js';
import { AppError, ErrorCode } from '../../errors.js';
import { SERVICE_VERSION } from '../../version.js';
import { DOCS_PREFIX, publicDocs } from '../docs/pages.js';
import { type ErrorRenderer, schemaFieldErrors } from '../errors.js';
import { createHostApp, type HostApp } from '../host.js';
import { finishDocument } from '../openapi.js';
import { rateLimitGuard } from '../rate-limit.js';
import { apiKeyAuthorizationScheme } from '../schemas.js';
import { backendGeoRoutes, flagRoutes } from './geo.js';

const BACKEND_PREFIX = '/v1';

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

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Partner Integrations: backend host',
        version: SERVICE_VERSION,
        description:
          'Countries and cities for partners, as paged lists `{count, next, previous, results}` ' +
          '(`limit` default 20, at most 100; `offset` default 0). Names are Arabic with ' +
          '`Accept-Language: ar` where known. List responses carry an `ETag`; send it back in ' +
          '`If-None-Match` to get a 304 while nothing changed. Errors are `{"detail": "..."}`; a 422 ' +
          'lists every invalid parameter as `{"detail": [{"loc": ["query", "<param>"], "msg", "type"}]}`. ' +
          'A reference of this document is served at `/docs/`, without credentials.\n\n' +
          'City data © GeoNames (https://www.geonames.org/), licensed under Creative Commons ' +
          'Attribution 4.0 (https://creativecommons.org/licenses/by/4.0/); selected and reshaped. ' +
          'Flags: flag-icons (MIT).',
      },
      components: {
        securitySchemes: {
          ApiKey: apiKeyAuthorizationScheme(
            'A backend partner key as `Api-Key <key>`, with scope `countries:read` or `cities:read` for ' +
              'the list it reads. Missing, invalid or revoked: 401; lacking the scope: 403.',
          ),
        },
      },
    },
    transformObject: finishDocument({ servers: () => [{ url: context.publicUrls.backend }] }),
  });
  app.get(`${BACKEND_PREFIX}/openapi.json`, { schema: { hide: true } }, async () => app.swagger());
  await app.register(publicDocs, {
    prefix: DOCS_PREFIX,
    host: 'backend host',
    document: () => app.swagger(),
    documentPath: `${BACKEND_PREFIX}/openapi.json`,
  });
  app.get(`${BACKEND_PREFIX}/docs`, { schema: { hide: true } }, (_request, reply) => reply.redirect(`${DOCS_PREFIX}/`));

  app.setNotFoundHandler(() => {
    throw new AppError(ErrorCode.NOT_FOUND);
  });

  await app.register(flagRoutes);
  await app.register(backendGeoRoutes, { context, limits, prefix: BACKEND_PREFIX });
  return app;
}
