// The backend host's routes by scope, and its OpenAPI 3.1 document built from them, served at
// `/v1/openapi.json` without auth.
import { SERVICE_VERSION } from '../../version.js';
import { finishDocument } from '../openapi.js';
import type { DocumentedHost, RouteScope } from '../route.js';
import { apiKeyAuthorizationScheme } from '../schemas.js';
import { backendGeoRoutes, flagRoutes } from './geo.js';

export const BACKEND_PREFIX = '/v1';

/** The flag images, without auth. */
export const FLAG_SCOPE: RouteScope = { prefix: '', routes: flagRoutes };

/** The paged lists, for backend partner keys. */
export const LIST_SCOPE: RouteScope = { prefix: BACKEND_PREFIX, routes: backendGeoRoutes };

/** The host's document, naming the host at `publicUrl` (read when the document is built). */
export const backendDocument = (publicUrl: () => string): DocumentedHost => ({
  documentPath: `${BACKEND_PREFIX}/openapi.json`,
  scopes: [FLAG_SCOPE, LIST_SCOPE],
  swagger: {
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
    transformObject: finishDocument({ servers: () => [{ url: publicUrl() }] }),
  },
});
