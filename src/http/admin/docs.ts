// Swagger UI at `/admin/docs` on the admin listener only (the integrations host serves no UI, just
// its document): the integrations host's document, and the admin API's own from the top bar.
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../../context.js';
import { buildIntegrationsApp } from '../integrations/app.js';

export const DOCS_PREFIX = '/admin/docs';

/** The integrations host's document, from an instance of that host that never listens. */
async function integrationsDocument(context: AppContext, logger: Parameters<typeof buildIntegrationsApp>[1]) {
  const integrations = await buildIntegrationsApp(context, logger);
  try {
    await integrations.ready();
    return integrations.swagger();
  } finally {
    await integrations.close();
  }
}

export const adminDocs: FastifyPluginAsync<{ context: AppContext }> = async (app, { context }) => {
  // Built on the first visit, not at start: start-up and memory are for the partner-facing hosts.
  let document: ReturnType<typeof integrationsDocument> | undefined;
  let built: Awaited<ReturnType<typeof integrationsDocument>>;
  app.addHook('onRequest', async () => {
    document ??= integrationsDocument(context, app.log).catch((error) => {
      document = undefined;
      throw error;
    });
    built = await document;
  });
  await app.register(swaggerUi, {
    routePrefix: DOCS_PREFIX,
    // `/admin/docs/json` serves the integrations host's document rather than the admin's.
    transformSpecification: () => built as unknown as Record<string, unknown>,
    transformSpecificationClone: false,
    uiConfig: {
      urls: [
        { url: `${DOCS_PREFIX}/json`, name: 'Integrations host (/api/v1)' },
        { url: '/admin/v1/openapi.json', name: 'Admin API (/admin/v1)' },
      ],
      'urls.primaryName': 'Integrations host (/api/v1)',
    } as Record<string, unknown>,
  });
};
