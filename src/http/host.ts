// Every host is a Fastify app built by `createHostApp`: one pipeline for every answer, made of the
// single-purpose plugins in src/http/host/. Each host then adds its error renderer, its
// authenticators and its routes.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import type { ListenerName } from '../config.js';
import type { AppContext } from '../context.js';
import { traceRequests } from '../tracing.js';
import { type ErrorRenderer, renderErrorsWith } from './errors.js';
import { everyAnswerHeaders, requestId } from './host/answer-headers.js';
import {
  clientErrorRefusal,
  lingerForRefusedBodies,
  malformedUrlRefusal,
  type RefusalBody,
} from './host/client-errors.js';
import { RequestCompletion } from './host/completion.js';
import type { HostApp } from './host/host-app.js';
import { healthProbes } from './host/probes.js';
import { refuseUnacceptableQueryText } from './host/query-text.js';
import { requestLogger } from './host/request-logger.js';
import { compileSchemasOnFirstUse } from './host/schema-compiling.js';
import { capConnections, fastifyTrustProxy, serverWithTimeouts, warnOfIgnoredForwarding } from './host/server.js';
import { registerJsonBodyParser } from './json-body.js';

export type { HostApp } from './host/host-app.js';
export { UNTRACED } from './host/probes.js';

/** Request bodies larger than this are refused with 413. */
const BODY_LIMIT_BYTES = 64 * 1024;
export const BODY_LIMIT_TEXT = `${BODY_LIMIT_BYTES / 1024} KiB`;

interface HostOptions {
  /** Which listener this is, in every log line. */
  listener: ListenerName;
  logger: FastifyBaseLogger;
  /** How the host says an error: its one error handler's renderer, and its refusals before routing. */
  errors: ErrorRenderer;
  /** Parts of the host that say errors in a body of their own, by path prefix (their own scope renders them). */
  partErrors?: { prefix: string; errors: ErrorRenderer }[];
}

/** The body of a request refused before routing: the renderer of the part of the host its target names. */
const refusalBody =
  ({ errors, partErrors = [] }: HostOptions): RefusalBody =>
  (error, target) =>
    (partErrors.find((part) => target.startsWith(part.prefix))?.errors ?? errors).body(error);

export function createHostApp(context: AppContext, options: HostOptions): HostApp {
  const { config } = context;
  const logger = options.logger.child({ listener: options.listener });
  const app = Fastify({
    serverFactory: serverWithTimeouts(config.connectionLimits),
    loggerInstance: logger,
    logController: new RequestCompletion(options.listener, context.metrics.requestDuration, logger),
    childLoggerFactory: requestLogger,
    frameworkErrors: malformedUrlRefusal(refusalBody(options)),
    clientErrorHandler: clientErrorRefusal(logger, refusalBody(options)),
    genReqId: requestId,
    bodyLimit: BODY_LIMIT_BYTES,
    routerOptions: { ignoreTrailingSlash: true },
    return503OnClosing: true,
    // One error handler per scope, ever: a second one is an error at start, not a warning (FSTWRN004).
    allowErrorHandlerOverride: false,
    trustProxy: fastifyTrustProxy(config.trustProxy),
  }).withTypeProvider<TypeBoxTypeProvider>();
  traceRequests(app);
  app.decorate('listener', options.listener);
  app.decorateRequest('audience', '');

  renderErrorsWith(app, options.errors);
  capConnections(app, config.connectionLimits);
  compileSchemasOnFirstUse(app);
  everyAnswerHeaders(app);
  warnOfIgnoredForwarding(app, config.trustProxy);
  registerJsonBodyParser(app);
  lingerForRefusedBodies(app);
  refuseUnacceptableQueryText(app);
  healthProbes(app, context);
  return app;
}

/**
 * The base URL of a listening host: the port it got, loopback for "every address". Built from the
 * socket, never from a request's Host header, which the client chooses.
 */
export function listenerUrl(app: Pick<HostApp, 'server'>): string {
  const address = app.server.address();
  if (!address || typeof address === 'string') return 'http://127.0.0.1';
  const host = address.address === '0.0.0.0' || address.address === '::' ? '127.0.0.1' : address.address;
  return `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
}
