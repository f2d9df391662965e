// One authenticator per credential kind, each an onRequest hook built by `authenticator()` around
// its `CredentialCheck`: the credential the request presents (from the credential cache when it is
// there, else from the database), then the rate limits. Every host uses them: the integrations
// host's SSO secret (integrations/tenant-auth.ts), the payment callback's X-API-KEY
// (integrations/payment-callback.ts), the backend partner key (backend/geo.ts), the admin bearer
// token (admin/operators.ts).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RateLimitGuard } from './rate-limit.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Whose answers its credential may be given (see `CredentialCheck.audienceOf`). */
    audience: string;
  }
}

export interface CredentialCheck<C> {
  /** The credential the request presents, null when none is valid. */
  lookUp(request: FastifyRequest): Promise<C | null>;
  /** What the per-credential rate limit counts it under; absent where credentials are not counted. */
  rateLimitKey?(credential: C): string;
  /** Whose answers it may be given: part of the key of a cached response; absent where nothing is cached. */
  audienceOf?(credential: C): string;
  /** The error answering a request without a valid credential. */
  refusal(request: FastifyRequest, reply: FastifyReply): Error;
  /** Within the limits: the request takes its credential; an error when the route refuses it anyway. */
  accept(request: FastifyRequest, credential: C): Error | undefined;
}

/** An authenticator: a failure is counted against the client's address, a credential against its own budget. */
export type Authenticator = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

export function authenticator<C>(limits: RateLimitGuard, check: CredentialCheck<C>): Authenticator {
  return async (request, reply) => {
    const credential = await check.lookUp(request);
    if (credential === null) {
      await limits.authenticationFailed(request, reply);
      throw check.refusal(request, reply);
    }
    // An answer to a credential is that credential's (secrets, tenant data): no cache between keeps
    // it, unless its route says otherwise (listings revalidate with their ETag).
    reply.header('cache-control', 'no-store');
    if (check.audienceOf) request.audience = check.audienceOf(credential);
    if (check.rateLimitKey) await limits.authenticated(request, reply, check.rateLimitKey(credential));
    const refused = check.accept(request, credential);
    if (refused) throw refused;
  };
}
