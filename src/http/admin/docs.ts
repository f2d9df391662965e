// Swagger UI at `/admin/docs` on the admin listener only (the integrations host serves no UI, just
// its document): the integrations host's document, and the admin API's own from the top bar.
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyPluginAsync } from 'fastify';

const DOCS_PREFIX = '/admin/docs';

/** Builds the integrations host's OpenAPI document (the wiring knows that host; the admin host does not). */
export type DocumentBuilder = () => Promise<unknown>;

export const adminDocs: FastifyPluginAsync<{ integrationsDocument: DocumentBuilder }> = async (
  app,
  { integrationsDocument },
) => {
  // Built on the first visit, not at start: start-up and memory are for the partner-facing hosts.
  let document: Promise<unknown> | undefined;
  let built: unknown;
  app.addHook('onRequest', async () => {
    document ??= integrationsDocument().catch((error) => {
      document = undefined;
      throw error;
    });
    built = await document;
  });
  await app.register(swaggerUi, {
    routePrefix: DOCS_PREFIX,
    // A Content-Security-Policy for the UI's own page and assets (hashes of its inline scripts),
    // without upgrade-insecure-requests: the admin listener is plain http on loopback by default.
    staticCSP: true,
    transformStaticCSP: (header) => header.replace(/\s*upgrade-insecure-requests;?/, ''),
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
