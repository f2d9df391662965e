// The integrations host's routes by scope, and its OpenAPI 3.1 document built from them, served at
// `/api/v1/openapi.json` without auth.
import { SERVICE_VERSION } from '../../version.js';
import { finishDocument } from '../openapi.js';
import type { DocumentedHost, RouteScope } from '../route.js';
import { apiKeyAuthorizationScheme } from '../schemas.js';
import { PaymentNotification, PaymentRequest } from '../shapes/payment-request.js';
import { ErrorEnvelope, envelopeErrorResponses } from './envelope.js';
import { geoRoutes } from './geo.js';
import { PAYMENT_CALLBACK_PREFIX, paymentCallbackRoutes } from './payment-callback.js';
import { partnerPaymentRoutes } from './payments.js';
import { portalSessionRoutes } from './portal-sessions.js';
import { Prompt, promptRoutes } from './prompts.js';
import { Trip, tripRoutes } from './trips.js';
import { WEBHOOKS } from './webhooks.js';

export const API_PREFIX = '/api/v1';

/** The `/api/v1/` resources, in the envelope, for the tenant of the SSO secret. */
export const RESOURCE_SCOPE: RouteScope = {
  prefix: API_PREFIX,
  routes: [...promptRoutes, ...tripRoutes, ...geoRoutes, ...partnerPaymentRoutes, ...portalSessionRoutes],
  sharedErrors: envelopeErrorResponses,
};

/** The payment callback: its own key and bodies, outside the resources' scope. */
export const CALLBACK_SCOPE: RouteScope = { prefix: PAYMENT_CALLBACK_PREFIX, routes: paymentCallbackRoutes };

/** Schemas shared by several routes: components in the document, `$ref`s in the routes. */
const SHARED_SCHEMAS = [ErrorEnvelope, Prompt, Trip, PaymentRequest, PaymentNotification];

/** The host's document, naming the host at `publicUrl` (read when the document is built). */
export const integrationsDocument = (publicUrl: () => string): DocumentedHost => ({
  documentPath: `${API_PREFIX}/openapi.json`,
  sharedSchemas: SHARED_SCHEMAS,
  scopes: [CALLBACK_SCOPE, RESOURCE_SCOPE],
  swagger: {
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
    transformObject: finishDocument({ servers: () => [{ url: publicUrl() }], webhooks: WEBHOOKS }),
    // Components keep the names of their `$id`s (`ErrorEnvelope`, ...), not `def-0`.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, index) => String(json.$id ?? `def-${index}`) },
  },
});
