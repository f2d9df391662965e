// The portal's pages, each a plugin of its own.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callbackRoutes } from './callbacks.js';
import { endpointRoutes } from './endpoint.js';
import { overviewRoutes } from './overview.js';
import { requestRoutes } from './requests.js';
import type { PortalDependencies } from './scope.js';

export const portalPages: FastifyPluginAsyncTypebox<PortalDependencies> = async (app, dependencies) => {
  await app.register(overviewRoutes, dependencies);
  await app.register(requestRoutes, dependencies);
  await app.register(callbackRoutes, dependencies);
  await app.register(endpointRoutes, dependencies);
};
