// The hosts' route lists as their documents name them, for tests that list the documented routes.
import { ADMIN_DOCUMENT } from '../../../src/http/admin/openapi.js';
import { backendDocument } from '../../../src/http/backend/openapi.js';
import { integrationsDocument } from '../../../src/http/integrations/openapi.js';
import type { Json } from '../../../src/http/openapi.js';
import type { DocumentedHost, RouteScope } from '../../../src/http/route.js';

/** Each documented host, naming itself at `publicUrl`. */
export const DOCUMENTED_HOSTS: Record<
  'integrations' | 'backend' | 'admin',
  (publicUrl: () => string) => DocumentedHost
> = { integrations: integrationsDocument, backend: backendDocument, admin: () => ADMIN_DOCUMENT };

/** `METHOD /path/{param}/` of each route of `scopes`, as a document names the operation. */
export const operationsOfScopes = (scopes: RouteScope[]): string[] =>
  scopes.flatMap(({ prefix, routes }) =>
    routes.map((route) => `${route.method} ${prefix}${route.url}`.replace(/:(\w+)/g, '{$1}')),
  );

/** `METHOD /path/{param}/` of each operation of `document`. */
export const operationsOfDocument = (document: Json): string[] =>
  Object.entries<Json>(document.paths).flatMap(([path, item]) =>
    Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
  );
