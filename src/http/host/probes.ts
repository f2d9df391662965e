// The probes every host answers without credentials: /healthz (the process is up) and /readyz
// (it can serve: its database answers).

import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { SERVICE_COMMIT, SERVICE_VERSION } from '../../version.js';
import type { HostApp } from './host-app.js';

/** `/healthz`: the process is up, and which build it runs. */
const Health = Type.Object({
  status: Type.Literal('ok'),
  version: Type.String({ description: 'The release (semantic version)' }),
  commit: Type.String({
    pattern: '^([0-9a-f]{7,40}|unknown)$',
    description: 'The commit the build was made from, or "unknown" when not built from a git checkout',
  }),
});

/** Routes polled every few seconds (probes, scrapes) are not traced: their traces would bury the others. */
export const UNTRACED = { otel: false };

export function healthProbes(app: HostApp, context: AppContext): void {
  app.get('/healthz', { config: UNTRACED, schema: { hide: true, response: { 200: Health } } }, async () => ({
    status: 'ok' as const,
    version: SERVICE_VERSION,
    commit: SERVICE_COMMIT,
  }));
  // Readiness is the database's: a Redis that does not answer only moves the rate limits into
  // each process, which the body says.
  app.get('/readyz', { config: UNTRACED, schema: { hide: true } }, async (_request, reply) => {
    const unavailable = await context.database.unavailable();
    const rateLimits = context.rateLimitStore?.degradation();
    const degraded = rateLimits ? { rate_limits: rateLimits } : {};
    if (!unavailable) return { status: 'ok', ...degraded };
    // The driver's words (a socket's path, a host name) are for operators: the admin listener's alone.
    const detail = app.listener === 'admin' ? { detail: unavailable.message } : {};
    return reply.code(503).send({ status: 'unavailable', reason: unavailable.reason, ...detail, ...degraded });
  });
}
