// The admin host: operators' API under /admin/v1/, bearer ADMIN_TOKEN, plain JSON bodies.
// Errors answer `{"error": {"code", "message", "details"?}}`.
import swagger from '@fastify/swagger';
import type { FastifyBaseLogger } from 'fastify';
import type { AppContext } from '../../context.js';
import { AppError, ErrorCode } from '../../errors.js';
import { SERVICE_VERSION } from '../../version.js';
import { createHostApp, type HostApp, UNTRACED } from '../host.js';
import { documentSharedErrors, finishDocument } from '../openapi.js';
import { rateLimitGuard } from '../rate-limit.js';
import { onlyAllowedHosts } from './allowed-hosts.js';
import { adminAuditRoutes, recordAdminChanges } from './audit.js';
import { adminBackupRoutes } from './backups.js';
import { consolePlugin } from './console/index.js';
import { CONSOLE_PREFIX } from './console/layout.js';
import { adminDocs, type DocumentBuilder, type PublicHostName } from './docs.js';
import { adminErrorResponses, renderAdminError } from './error-responses.js';
import { adminGeoRoutes } from './geo.js';
import { adminOperatorRoutes, authenticateOperator, enforceRoles } from './operators.js';
import { adminPaymentRoutes } from './payments.js';
import { adminPromptRoutes } from './prompts.js';
import { adminRetentionRoutes } from './retention.js';
import { adminTenantRoutes } from './tenants.js';
import { adminTripRoutes } from './trips.js';

const ADMIN_PREFIX = '/admin/v1';

interface AdminHostOptions {
  /** The public hosts' documents, for the docs UI. */
  documents: Record<PublicHostName, DocumentBuilder>;
}

export async function buildAdminApp(
  context: AppContext,
  logger: FastifyBaseLogger,
  { documents }: AdminHostOptions,
): Promise<HostApp> {
  const app = createHostApp(context, { listener: 'admin', logger, errors: { body: renderAdminError } });
  app.addHook('onRequest', onlyAllowedHosts(context.config.adminAllowedHosts));

  await app.register(swagger, {
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
  });
  app.get(`${ADMIN_PREFIX}/openapi.json`, { schema: { hide: true } }, async () => app.swagger());
  // Prometheus scrapes without a token: the admin listener is private (127.0.0.1 by default).
  const { registry } = context.metrics;
  app.get('/metrics', { config: UNTRACED, schema: { hide: true } }, async (_request, reply) =>
    reply.type(registry.contentType).send(await registry.metrics()),
  );
  // Before any route: every change on this host, whatever plugin adds its route, is audited.
  recordAdminChanges(app, context);
  enforceRoles(app);
  const limits = rateLimitGuard(context, 'admin');
  await app.register(adminDocs, { documents, hostUrl: (host) => context.publicUrls[host] });

  app.setNotFoundHandler((request) => {
    throw new AppError(ErrorCode.NOT_FOUND, `No route ${request.method} ${request.url}.`);
  });

  await app.register(
    async (admin) => {
      // Every route documents the errors it can answer, with their exact bodies.
      documentSharedErrors(admin, adminErrorResponses);
      admin.addHook('onRequest', authenticateOperator(context, limits));
      await admin.register(adminTenantRoutes, { context });
      await admin.register(adminGeoRoutes, { context });
      await admin.register(adminPromptRoutes, { context });
      await admin.register(adminTripRoutes, { context });
      await admin.register(adminPaymentRoutes, { context });
      await admin.register(adminAuditRoutes, { context });
      await admin.register(adminOperatorRoutes, { context });
      await admin.register(adminBackupRoutes, { context });
      await admin.register(adminRetentionRoutes, { context });
    },
    { prefix: ADMIN_PREFIX },
  );
  await app.register(consolePlugin, { prefix: CONSOLE_PREFIX, context, limits });
  return app;
}
