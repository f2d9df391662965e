// The HTTP server under a host and what it says of its clients: Node's timeouts checked often, a
// cap on connections, and which address a request comes from behind a proxy.
import { createServer } from 'node:http';
import type { FastifyServerOptions } from 'fastify';
import type { Config } from '../../config.js';
import type { HostApp } from './host-app.js';

type ConnectionLimits = Config['connectionLimits'];

/**
 * Node checks the header and request timeouts on this period (30 s by default), so a slowloris
 * connection would otherwise outlive its timeout by up to that much.
 */
const TIMEOUT_CHECK_INTERVAL_MS = 1000;

/** The server Fastify would make, with Node's timeouts checked every TIMEOUT_CHECK_INTERVAL_MS. */
export const serverWithTimeouts =
  (limits: ConnectionLimits): FastifyServerOptions['serverFactory'] =>
  (handler) => {
    const server = createServer(
      {
        headersTimeout: limits.headersTimeoutSeconds * 1000,
        connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS,
        requestTimeout: limits.requestTimeoutSeconds * 1000,
      },
      handler,
    );
    server.keepAliveTimeout = limits.keepAliveTimeoutSeconds * 1000;
    return server;
  };

/**
 * Past the cap, new connections are closed at once: the process keeps file descriptors and memory
 * for the clients it already serves.
 */
export function capConnections(app: HostApp, limits: ConnectionLimits): void {
  if (limits.maxConnections > 0) app.server.maxConnections = limits.maxConnections;
}

/** Fastify's `trustProxy` for ours: a hop count as proxy-addr's function (Fastify's types take no number). */
export function fastifyTrustProxy(trustProxy: Config['trustProxy']) {
  return trustProxy === 1 ? (_address: string, hop: number) => hop < 1 : trustProxy;
}

/**
 * Behind a proxy with TRUST_PROXY off every client has the proxy's address, and shares its failure
 * budget: said once, at the first request that carries X-Forwarded-For.
 */
export function warnOfIgnoredForwarding(app: HostApp, trustProxy: Config['trustProxy']): void {
  if (trustProxy !== false) return;
  let said = false;
  app.addHook('onRequest', (request, _reply, done) => {
    if (!said && request.headers['x-forwarded-for'] !== undefined) {
      said = true;
      request.log.warn(
        "requests carry X-Forwarded-For but TRUST_PROXY is off: every client counts as the proxy's address; " +
          'set TRUST_PROXY if a proxy you run sets the header (said once)',
      );
    }
    done();
  });
}
