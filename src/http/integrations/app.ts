// The integrations host: `/api/v1/` resource endpoints in the envelope of spec 2.1, with the
// tenant resolved once per request from `Authorization: Api-Key <SSO_HMAC_SECRET>`; and the
// payment callback, which has its own auth and body (spec 4.6) and sits outside that scope.
import type { FastifyBaseLogger } from 'fastify';
import type { AppContext } from '../../context.js';
import { AppError, ErrorCode } from '../../errors.js';
import { arabicPartnerGuideFile, partnerGuideFile, partnerToolsFile } from '../../paths.js';
import { DOCS_PREFIX, publicDocs } from '../docs/pages.js';
import { trackAllowedMethods } from '../host/allowed-methods.js';
import { answerFromCache } from '../host/cached-answer.js';
import { createHostApp, type HostApp } from '../host.js';
import { documentSharedErrors } from '../openapi.js';
import { rateLimitGuard } from '../rate-limit.js';
import { envelopeErrorResponses, renderEnvelopeError } from './envelope.js';
import { geoRoutes } from './geo.js';
import { registerOpenApi } from './openapi.js';
import { callbackErrors, PAYMENT_CALLBACK_PREFIX, paymentCallbackRoutes } from './payment-callback.js';
import { partnerPaymentRoutes } from './payments.js';
import { portalSessionRoutes } from './portal-sessions.js';
import { promptRoutes } from './prompts.js';
import { authenticateTenant, refuseTenantInPath, refuseTenantInRequest } from './tenant-auth.js';
import { tripRoutes } from './trips.js';

const API_PREFIX = '/api/v1';

export async function buildIntegrationsApp(context: AppContext, logger: FastifyBaseLogger): Promise<HostApp> {
  const limits = rateLimitGuard(context, 'integrations');
  const app = createHostApp(context, {
    listener: 'integrations',
    logger,
    errors: { body: renderEnvelopeError },
    partErrors: [{ prefix: PAYMENT_CALLBACK_PREFIX, errors: callbackErrors }],
  });
  const allowedMethods = trackAllowedMethods(app);
  const authenticate = authenticateTenant(context, limits);
  await registerOpenApi(app, context, API_PREFIX);
  await app.register(publicDocs, {
    prefix: DOCS_PREFIX,
    host: 'integrations host',
    document: () => app.swagger(),
    documentPath: `${API_PREFIX}/openapi.json`,
    guideFile: partnerGuideFile,
    arabicGuideFile: arabicPartnerGuideFile,
    exampleUrls: {
      'https://portal.partners.example.com': context.publicUrls.portal,
      'https://partners.example.com': context.publicUrls.integrations,
      'https://geo.example.com': context.publicUrls.backend,
    },
    partnerToolsFile,
  });
  // Where a partner may look for the docs first: outside the credential's scope, like the document.
  app.get(`${API_PREFIX}/docs`, { schema: { hide: true } }, (_request, reply) => reply.redirect(`${DOCS_PREFIX}/`));

  app.setNotFoundHandler(async (request, reply) => {
    const allowed = allowedMethods(request.url);
    if (allowed.length > 0) {
      reply.header('allow', allowed.join(', '));
      throw new AppError(ErrorCode.METHOD_NOT_ALLOWED, `Method ${request.method} is not allowed here.`);
    }
    if (request.url.startsWith(`${API_PREFIX}/`)) {
      // An unknown resource path: say so plainly, unless it tries to name a tenant.
      await refuseTenantInPath(authenticate, request, reply);
    }
    throw new AppError(ErrorCode.NOT_FOUND, 'No such resource.');
  });

  await app.register(paymentCallbackRoutes, {
    context,
    limits,
    prefix: PAYMENT_CALLBACK_PREFIX,
  });
  await app.register(
    async (api) => {
      // Every resource route documents the errors it can answer.
      documentSharedErrors(api, envelopeErrorResponses);
      api.decorateRequest('tenant', null as never);
      api.decorateRequest('mode', null as never);
      api.addHook('onRequest', authenticate);
      api.addHook('onRequest', answerFromCache(context));
      api.addHook('preValidation', refuseTenantInRequest);
      // Bodies are JSON only: a text/plain body is a 415, not a string that fails validation.
      api.removeContentTypeParser('text/plain');
      // Resource routes, each a plugin of its domain, are registered here.
      await api.register(promptRoutes, { context });
      await api.register(tripRoutes, { context });
      await api.register(geoRoutes, { context });
      await api.register(partnerPaymentRoutes, { context });
      await api.register(portalSessionRoutes, { context });
    },
    { prefix: API_PREFIX },
  );
  return app;
}
