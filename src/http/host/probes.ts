// The probes every host answers without credentials: /healthz (the process is up) and /readyz
// (it can serve: its database answers).
import type { AppContext } from '../../context.js';
import { SERVICE_VERSION } from '../../version.js';
import type { HostApp } from './host-app.js';

export function healthProbes(app: HostApp, context: AppContext): void {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok', version: SERVICE_VERSION }));
  // Readiness is the database's: a Redis that does not answer only moves the rate limits into
  // each process, which the body says.
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    const unavailable = await context.database.unavailable();
    const rateLimits = context.rateLimitStore?.degradation();
    const degraded = rateLimits ? { rate_limits: rateLimits } : {};
    if (!unavailable) return { status: 'ok', ...degraded };
    return reply
      .code(503)
      .send({ status: 'unavailable', reason: unavailable.reason, detail: unavailable.message, ...degraded });
  });
}
