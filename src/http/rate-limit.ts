// Rate limits (@fastify/rate-limit), checked by each host's authentication, not by route:
// - per credential: RATE_LIMIT_PER_MINUTE requests a minute for each accepted credential on the
//   integrations and backend hosts (the payment callback's partner API key included);
// - failed authentications: AUTH_FAILURE_LIMIT_PER_MINUTE a minute per client address and host.
//   The failure that goes over the budget, and every request needing a credential from that
//   address until the window ends, is answered 429 before any credential is looked at: guessing
//   keys slows to the budget, and a guess that happens to be right is not told apart.
// Counters live in this process, or in Redis with REDIS_URL so that every instance shares them.
// A limit of 0 is off. A Redis outage lets requests through (skipOnError) rather than refuse all.
import rateLimit from '@fastify/rate-limit';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ListenerName } from '../config.js';
import type { AppContext } from '../context.js';
import { AppError, ErrorCode } from '../errors.js';
import type { HostApp } from './host.js';

export interface RateLimitGuard {
  /** Before a credential is checked: an address over its failure budget is refused. */
  beforeAuthentication(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  /** A credential was refused: counted against the address; the one over the budget is refused. */
  authenticationFailed(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  /** A credential was accepted: counted against its own budget, whose state every answer carries. */
  authenticated(request: FastifyRequest, reply: FastifyReply, credentialId: string): Promise<void>;
}

interface LimitStatus {
  isAllowed: boolean;
  isExceeded?: boolean;
  max?: number;
  remaining?: number;
  ttlInSeconds?: number;
}
type Limiter = (request: FastifyRequest, options?: { increment?: boolean }) => Promise<LimitStatus>;

declare module 'fastify' {
  interface FastifyRequest {
    /** The credential a per-credential limit counts this request against. */
    rateLimitCredential: string;
  }
}

/** The draft standard's headers (RateLimit-Limit, -Remaining, -Reset in seconds). */
function describe(reply: FastifyReply, status: LimitStatus): void {
  if (status.max === undefined) return;
  reply.header('ratelimit-limit', status.max);
  reply.header('ratelimit-remaining', status.remaining ?? 0);
  reply.header('ratelimit-reset', status.ttlInSeconds ?? 0);
}

function refuse(reply: FastifyReply, status: LimitStatus): never {
  describe(reply, status);
  reply.header('retry-after', Math.max(1, status.ttlInSeconds ?? 1));
  throw new AppError(ErrorCode.RATE_LIMITED);
}

export async function registerRateLimits(
  app: HostApp,
  { config, redis, metrics }: AppContext,
  listener: ListenerName,
): Promise<RateLimitGuard> {
  await app.register(rateLimit, {
    global: false,
    skipOnError: true,
    ...(redis && { redis, nameSpace: `${config.redisKeyPrefix}:rate-limit:` }),
  });
  const limited = (limit: 'credential' | 'auth_failures') => metrics.rateLimited.inc({ listener, limit });
  app.decorateRequest('rateLimitCredential', '');
  const limiter = (max: number, key: (request: FastifyRequest) => string): Limiter | null =>
    max > 0
      ? (app.createRateLimit({ max, timeWindow: config.rateLimitWindowSeconds * 1000, keyGenerator: key }) as Limiter)
      : null;

  const perCredential = limiter(config.rateLimitPerMinute, (request) => `credential:${request.rateLimitCredential}`);
  const authFailures = limiter(config.authFailureLimitPerMinute, (request) => `auth:${listener}:${request.ip}`);

  return {
    async beforeAuthentication(request, reply) {
      if (!authFailures) return;
      const status = await authFailures(request, { increment: false });
      if (status.isExceeded) {
        limited('auth_failures');
        refuse(reply, status);
      }
    },
    async authenticationFailed(request, reply) {
      if (!authFailures) return;
      const status = await authFailures(request);
      if (status.isExceeded) {
        limited('auth_failures');
        refuse(reply, status);
      }
    },
    async authenticated(request, reply, credentialId) {
      if (!perCredential) return;
      request.rateLimitCredential = credentialId;
      const status = await perCredential(request);
      if (status.isExceeded) {
        limited('credential');
        refuse(reply, status);
      }
      describe(reply, status);
    },
  };
}
