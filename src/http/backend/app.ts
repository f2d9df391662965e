// The backend host: `/v1/` countries and cities for backend partner keys, paged lists without
// the envelope, errors as `{"detail": ...}` (DECISIONS §5).
import type { FastifyBaseLogger } from 'fastify';
import type { AppContext } from '../../context.js';
import { ErrorCode } from '../../errors.js';
import { toAppError } from '../errors.js';
import { createHostApp, type HostApp } from '../host.js';

export async function buildBackendApp(context: AppContext, logger: FastifyBaseLogger): Promise<HostApp> {
  const app = createHostApp(context, { listener: 'backend', logger });
  app.setErrorHandler((error, request, reply) => {
    const appError = toAppError(error);
    if (appError.code === ErrorCode.INTERNAL_ERROR) request.log.error({ err: error }, 'unexpected error');
    return reply.code(appError.statusCode).send({ detail: appError.message });
  });
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ detail: 'Not found.' }));
  return app;
}
