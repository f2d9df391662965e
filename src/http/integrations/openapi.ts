// The integrations host's OpenAPI 3.1 document, generated from the route schemas and served at
// `/api/v1/openapi.json` without auth. Register before the routes, so @fastify/swagger sees them.
import swagger from '@fastify/swagger';
import type { AppContext } from '../../context.js';
import { SERVICE_VERSION } from '../../version.js';
import type { HostApp } from '../host.js';
import { finishDocument } from '../openapi.js';
import { apiKeyAuthorizationScheme } from '../schemas.js';
import { PaymentNotification, PaymentRequest } from '../shapes/payment-request.js';
import { ErrorEnvelope } from './envelope.js';
import { Prompt } from './prompts.js';
import { Trip } from './trips.js';
import { WEBHOOKS } from './webhooks.js';

/** Schemas shared by several routes: components in the document, `$ref`s in the routes. */
const SHARED_SCHEMAS = [ErrorEnvelope, Prompt, Trip, PaymentRequest, PaymentNotification];

export async function registerOpenApi(app: HostApp, context: AppContext, prefix: string): Promise<void> {
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Partner Integrations: integrations host',
        version: SERVICE_VERSION,
        description:
          'Server-to-server API for partners. Every `/api/v1/` response is an envelope ' +
          '`{success, message, data, error}`; on error `data` is null and `error.code` is stable. ' +
          'The tenant comes from the credential: never send `tenant`, `tenant_id` or `tenant_slug`. ' +
          'No CORS: browsers cannot call this host. The partner guide and a reference of this document are ' +
          'served at `/docs/`, without credentials.',
      },
      components: {
        securitySchemes: {
          ApiKey: apiKeyAuthorizationScheme(
            "The tenant's SSO HMAC secret in the form `Api-Key <secret>` (e.g. " +
              '`Authorization: Api-Key pis_sso_...`). A missing, revoked or wrong-scheme credential, or an ' +
              'inactive tenant, is a 401 `UNAUTHORIZED`.',
          ),
          PartnerApiKey: {
            type: 'apiKey',
            in: 'header',
            name: 'X-API-KEY',
            description: "The tenant's partner API key; only the payment callback uses it.",
          },
        },
      },
      security: [{ ApiKey: [] }],
    },
    transformObject: finishDocument({ servers: () => [{ url: context.publicUrls.integrations }], webhooks: WEBHOOKS }),
    // Components keep the names of their `$id`s (`ErrorEnvelope`, ...), not `def-0`.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, index) => String(json.$id ?? `def-${index}`) },
  });
  app.get(`${prefix}/openapi.json`, { schema: { hide: true } }, async () => app.swagger());
}
