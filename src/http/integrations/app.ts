// The integrations host: `/api/v1/` resource endpoints in the envelope of spec 2.1, and the
// payment callback with its own body (spec 4.6).
import type { FastifyBaseLogger } from 'fastify';
import type { AppContext } from '../../context.js';
import { AppError, ErrorCode } from '../../errors.js';
import { toAppError } from '../errors.js';
import { createHostApp, type HostApp } from '../host.js';

export function renderEnvelopeError(error: AppError) {
  return {
    success: false,
    message: error.message,
    data: null,
    error: { code: error.code, ...(error.details && { details: error.details }) },
  };
}

export async function buildIntegrationsApp(context: AppContext, logger: FastifyBaseLogger): Promise<HostApp> {
  const app = createHostApp(context, { listener: 'integrations', logger });
  app.setErrorHandler((error, request, reply) => {
    const appError = toAppError(error);
    if (appError.code === ErrorCode.INTERNAL_ERROR) request.log.error({ err: error }, 'unexpected error');
    return reply.code(appError.statusCode).send(renderEnvelopeError(appError));
  });
  app.setNotFoundHandler((_request, reply) =>
    reply.code(404).send(renderEnvelopeError(new AppError(ErrorCode.NOT_FOUND))),
  );
  return app;
}
