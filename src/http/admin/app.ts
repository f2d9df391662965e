// The admin host: operators' API under /admin/v1/, bearer ADMIN_TOKEN, plain JSON bodies.
// Errors answer `{"error": {"code", "message", "details"?}}`.
import type { FastifyBaseLogger } from 'fastify';
import type { AppContext } from '../../context.js';
import { AppError, ErrorCode } from '../../errors.js';
import { createHostApp, type HostApp, UNTRACED } from '../host.js';
import { rateLimitGuard } from '../rate-limit.js';
import { mountScope, registerDocument } from '../route.js';
import { onlyAllowedHosts } from './allowed-hosts.js';
import { recordAdminChanges } from './audit.js';
import { consolePlugin } from './console/index.js';
import { CONSOLE_PREFIX } from './console/layout.js';
import { adminDocs, type DocumentBuilder, type PublicHostName } from './docs.js';
import { renderAdminError } from './error-responses.js';
import { ADMIN_DOCUMENT, ADMIN_SCOPE } from './openapi.js';
import { authenticateOperator, enforceRoles } from './operators.js';

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

  await registerDocument(app, ADMIN_DOCUMENT);
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

  await mountScope(app, ADMIN_SCOPE, context, (admin) => {
    admin.addHook('onRequest', authenticateOperator(context, limits));
  });
  await app.register(consolePlugin, { prefix: CONSOLE_PREFIX, context, limits });
  return app;
}
