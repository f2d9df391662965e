// The admin API's routes, and its OpenAPI 3.1 document built from them, served at
// `/admin/v1/openapi.json` on the admin listener.
import { SERVICE_VERSION } from '../../version.js';
import { finishDocument } from '../openapi.js';
import type { DocumentedHost, RouteScope } from '../route.js';
import { adminAuditRoutes } from './audit.js';
import { adminBackupRoutes } from './backups.js';
import { adminErrorResponses } from './error-responses.js';
import { adminGeoRoutes } from './geo.js';
import { adminOperatorRoutes } from './operators.js';
import { adminPaymentRoutes } from './payments.js';
import { adminPromptRoutes } from './prompts.js';
import { adminRetentionRoutes } from './retention.js';
import { adminTenantRoutes } from './tenants.js';
import { adminTripRoutes } from './trips.js';

export const ADMIN_PREFIX = '/admin/v1';

/** The operators' API: every route documents the errors it can answer, with their exact bodies. */
export const ADMIN_SCOPE: RouteScope = {
  prefix: ADMIN_PREFIX,
  routes: [
    ...adminTenantRoutes,
    ...adminGeoRoutes,
    ...adminPromptRoutes,
    ...adminTripRoutes,
    ...adminPaymentRoutes,
    ...adminAuditRoutes,
    ...adminOperatorRoutes,
    ...adminBackupRoutes,
    ...adminRetentionRoutes,
  ],
  sharedErrors: adminErrorResponses,
};

export const ADMIN_DOCUMENT: DocumentedHost = {
  documentPath: `${ADMIN_PREFIX}/openapi.json`,
  scopes: [ADMIN_SCOPE],
  swagger: {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Partner Integrations: admin API',
        version: SERVICE_VERSION,
        description:
          "Operators API. Every route needs `Authorization: Bearer <token>`: ADMIN_TOKEN (the bootstrap admin) or a named operator's token. " +
          'A read-only operator may only read; an operator may change everything but operators; an admin may do everything.',
      },
      components: { securitySchemes: { adminToken: { type: 'http', scheme: 'bearer' } } },
      security: [{ adminToken: [] }],
    },
    // Relative: the document is read from the admin listener it describes, wherever that is.
    transformObject: finishDocument({ servers: () => [{ url: '/', description: 'this admin listener' }] }),
  },
};
