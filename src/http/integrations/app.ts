// The integrations host: `/api/v1/` resource endpoints in the envelope of spec 2.1, with the
// tenant resolved once per request from `Authorization: Api-Key <SSO_HMAC_SECRET>`; and the
// payment callback, which has its own auth and body (spec 4.6) and sits outside that scope.
import type { FastifyBaseLogger } from 'fastify';
import type { AppContext } from '../../context.js';
import { AppError, ErrorCode } from '../../errors.js';
import { arabicPartnerGuideFile, partnerGuideFile, partnerToolsFile } from '../../paths.js';
import { DOCS_PREFIX, publicDocs } from '../docs/pages.js';
import { refuseOtherMethods, trackAllowedMethods } from '../host/allowed-methods.js';
import { answerFromCache } from '../host/cached-answer.js';
import { createHostApp, type HostApp } from '../host.js';
import { rateLimitGuard } from '../rate-limit.js';
import { mountScope, registerDocument } from '../route.js';
import { renderEnvelopeError } from './envelope.js';
import { API_PREFIX, CALLBACK_SCOPE, integrationsDocument, RESOURCE_SCOPE } from './openapi.js';
import { callbackErrors, guardPaymentCallback, PAYMENT_CALLBACK_PREFIX } from './payment-callback.js';
import { authenticateTenant, refuseTenantInPath, refuseTenantInRequest } from './tenant-auth.js';

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
  await registerDocument(
    app,
    integrationsDocument(() => context.publicUrls.integrations),
  );
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
    refuseOtherMethods(allowedMethods, request, reply, `Method ${request.method} is not allowed here.`);
    if (request.url.startsWith(`${API_PREFIX}/`)) {
      // An unknown resource path: say so plainly, unless it tries to name a tenant.
      await refuseTenantInPath(authenticate, request, reply);
    }
    throw new AppError(ErrorCode.NOT_FOUND, 'No such resource.');
  });

  await mountScope(app, CALLBACK_SCOPE, context, guardPaymentCallback(context, limits));
  await mountScope(app, RESOURCE_SCOPE, context, (api) => {
    api.decorateRequest('tenant', null as never);
    api.decorateRequest('mode', null as never);
    api.addHook('onRequest', authenticate);
    api.addHook('onRequest', answerFromCache(context));
    api.addHook('preValidation', refuseTenantInRequest);
    // Bodies are JSON only: a text/plain body is a 415, not a string that fails validation.
    api.removeContentTypeParser('text/plain');
  });
  return app;
}
