// `/v1/countries/` and `/v1/cities/` for backend partner keys (spec 4.5, 5.3), and the flag images
// the country objects of both hosts point at.
import { readFile } from 'node:fs/promises';
import { type TSchema, Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { AppError, DEFAULT_MESSAGE, ErrorCode } from '../../errors.js';
import { flagSvgPath } from '../../geo/index.js';
import { type BackendPartner, type BackendScope, resolveBackendPartnerKey } from '../../tenants/index.js';
import { apiKeyFromAuthorization } from '../api-key.js';
import { authenticator, type CredentialCheck } from '../authentication.js';
import { challenge, challengeHeader, credentialHint } from '../credential-hints.js';
import { CityQuery, CountryQuery, listingResponses, serveCities, serveCountries } from '../geo-listings.js';
import { answerFromCache } from '../host/cached-answer.js';
import type { HostApp } from '../host.js';
import { allowHeader, namedExamples, retryAfterHeader, withCredentialAnswerHeaders } from '../openapi.js';
import { PagedList } from '../paging.js';
import type { RateLimitGuard } from '../rate-limit.js';
import { route } from '../route.js';
import { City, Country } from '../shapes/geo.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope a backend partner key needs for this route. */
    scope?: BackendScope;
  }
}

const Detail = Type.Object({ detail: Type.String() });
const ValidationDetail = Type.Object({
  detail: Type.Array(
    Type.Object({
      loc: Type.Array(Type.String(), { description: '["query", "<parameter>"]' }),
      msg: Type.String(),
      type: Type.String({
        description:
          'e.g. int_parsing, greater_than_equal, uuid_parsing, enum, string_too_short, string_pattern_mismatch',
      }),
    }),
  ),
});
const NOT_PROVIDED = 'Authentication credentials were not provided.';
const INVALID_KEY = 'Invalid API key.';
const lacksScope = (scope: BackendScope) => `This API key lacks the ${scope} permission.`;
/** A wrong method's detail, as Django REST Framework words it. */
export const methodNotAllowed = (method: string) => `Method "${method}" not allowed.`;

/** A documented error response with the exact bodies answered, by name. */
const detailResponse = (description: string, schema: TSchema, examples: [string, unknown][]) => ({
  description,
  content: { 'application/json': { schema, examples: namedExamples(examples) } },
});

/** The error responses of a list needing `scope`. */
const errorResponses = (scope: BackendScope) => ({
  401: {
    ...detailResponse(
      'Missing, invalid or revoked Api-Key (or its tenant is inactive); `WWW-Authenticate: Api-Key` with an `error_description` saying what to check',
      Detail,
      [
        ['missing', { detail: NOT_PROVIDED }],
        ['invalid', { detail: INVALID_KEY }],
      ],
    ),
    headers: challengeHeader('`Api-Key error_description="<what to check>"`'),
  },
  403: detailResponse('The key lacks the scope of this list', Detail, [['scope', { detail: lacksScope(scope) }]]),
  405: {
    ...detailResponse('A method the path does not serve; `Allow` lists those it does', Detail, [
      ['method', { detail: methodNotAllowed('POST') }],
    ]),
    headers: allowHeader,
  },
  422: detailResponse('Invalid query parameters, one entry each', ValidationDetail, [
    ['invalid', { detail: [{ loc: ['query', 'limit'], msg: 'must be >= 1', type: 'greater_than_equal' }] }],
  ]),
  429: {
    ...detailResponse('Over the rate limit; retry after `Retry-After` seconds', Detail, [
      ['limited', { detail: DEFAULT_MESSAGE.RATE_LIMITED }],
    ]),
    headers: retryAfterHeader,
  },
  500: detailResponse('Unexpected server error', Detail, [['error', { detail: DEFAULT_MESSAGE.INTERNAL_ERROR }]]),
  503: {
    ...detailResponse('The database is unavailable; retry after `Retry-After` seconds', Detail, [
      ['unavailable', { detail: DEFAULT_MESSAGE.SERVICE_UNAVAILABLE }],
    ]),
    headers: retryAfterHeader,
  },
});

/** 401 without a valid key, 403 without the route's scope (checked before the query is validated). */
const partnerKeyCheck = (context: AppContext): CredentialCheck<BackendPartner> => ({
  lookUp: (request) =>
    resolveBackendPartnerKey(context.db, context.caches, apiKeyFromAuthorization(request.headers.authorization)),
  rateLimitKey: (partner) => partner.keyId,
  // Every backend key with the scope reads the same answers.
  audienceOf: () => '',
  // The body is `{"detail"}` as specified; what to fix goes in the challenge.
  refusal(request, reply) {
    reply.header('www-authenticate', challenge('Api-Key', credentialHint('backend', request.headers)));
    return new AppError(ErrorCode.UNAUTHORIZED, request.headers.authorization ? INVALID_KEY : NOT_PROVIDED);
  },
  accept(request, partner) {
    const scope = request.routeOptions.config.scope;
    return scope && !partner.scopes.includes(scope) ? new AppError(ErrorCode.FORBIDDEN, lacksScope(scope)) : undefined;
  },
});

/** The hooks of the lists' scope: the partner key and its scope, then the cached answer. */
export const guardBackendLists = (context: AppContext, limits: RateLimitGuard) => (scope: HostApp) => {
  scope.addHook('onRequest', authenticator(limits, partnerKeyCheck(context)));
  scope.addHook('onRequest', answerFromCache(context));
};

export const backendGeoRoutes = [
  route({
    method: 'GET',
    url: '/countries/',
    config: { scope: 'countries:read' },
    schema: {
      operationId: 'listCountries',
      tags: ['geo'],
      summary: 'Countries by name (the Arabic name with `Accept-Language: ar`), by `code` or `search`',
      security: [{ ApiKey: [] }],
      querystring: CountryQuery,
      response: withCredentialAnswerHeaders({
        ...listingResponses(PagedList(Country)),
        ...errorResponses('countries:read'),
      }),
    },
    handler: (context) => (request, reply) =>
      serveCountries(context, request, request.query, reply, 'backend', (list) => list),
  }),

  route({
    method: 'GET',
    url: '/cities/',
    config: { scope: 'cities:read' },
    schema: {
      operationId: 'listCities',
      tags: ['geo'],
      summary: 'Cities by name (the Arabic name with `Accept-Language: ar`) then id, by `country` or `search`',
      security: [{ ApiKey: [] }],
      querystring: CityQuery,
      response: withCredentialAnswerHeaders({ ...listingResponses(PagedList(City)), ...errorResponses('cities:read') }),
    },
    handler: (context) => (request, reply) =>
      serveCities(context, request, request.query, reply, 'backend', (list) => list),
  }),
];

/** Flags change only with the flag-icons package: cache them for a month. */
const FLAG_CACHE_CONTROL = 'public, max-age=2592000';

export const flagRoutes = [
  route({
    method: 'GET',
    url: '/static/flags/:file',
    schema: {
      operationId: 'getFlag',
      tags: ['geo'],
      summary: 'A country flag (SVG, 4:3), without auth',
      security: [],
      params: Type.Object({ file: Type.String({ description: '<lower-case country code>.svg, e.g. sa.svg' }) }),
      response: {
        200: {
          description: 'The flag',
          content: { 'image/svg+xml': { schema: Type.String() } },
          headers: { 'Cache-Control': { type: 'string', description: `\`${FLAG_CACHE_CONTROL}\`` } },
        },
        404: detailResponse('No flag for this file name', Detail, [['unknown', { detail: DEFAULT_MESSAGE.NOT_FOUND }]]),
      },
    },
    handler: () => {
      const svgs = new Map<string, Buffer>();
      return async (request, reply) => {
        const code = /^([A-Za-z]{2})\.svg$/.exec(request.params.file)?.[1].toLowerCase();
        const path = code ? flagSvgPath(code) : null;
        if (!code || !path) throw new AppError(ErrorCode.NOT_FOUND);
        let svg = svgs.get(code);
        if (!svg) {
          svg = await readFile(path);
          svgs.set(code, svg);
        }
        return reply
          .type('image/svg+xml')
          .header('cache-control', FLAG_CACHE_CONTROL)
          .header('x-content-type-options', 'nosniff')
          .send(svg as never);
      };
    },
  }),
];
