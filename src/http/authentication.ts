// A host's one authenticator, run by every request it authenticates: the credential presented
// (from the credential cache in the same tick when it is there, from the database when not), then
// the rate limits. A callback-style onRequest hook: a cached credential costs no promise of ours.
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { LookedUp } from '../tenants/index.js';
import type { RateLimitGuard } from './rate-limit.js';

export interface CredentialCheck<C> {
  /** The credential the request presents, null when none is valid. */
  lookUp(request: FastifyRequest): LookedUp<C | null>;
  /** What its rate limit counts: the credential's id. */
  idOf(credential: C): string;
  /** The error answering a request without a valid credential. */
  refusal(request: FastifyRequest, reply: FastifyReply): Error;
  /** Within the limits: the request takes its credential; an error when the route refuses it anyway. */
  accept(request: FastifyRequest, credential: C): Error | undefined;
}

export function authenticator<C>(limits: RateLimitGuard, check: CredentialCheck<C>): onRequestHookHandler {
  return (request, reply, done) => {
    const decide = (credential: C | null) => {
      if (credential === null) {
        limits.authenticationFailed(request, reply).then(() => done(check.refusal(request, reply)), done);
      } else {
        limits
          .authenticated(request, reply, check.idOf(credential))
          .then(() => done(check.accept(request, credential)), done);
      }
    };
    const found = check.lookUp(request);
    if (found instanceof Promise) found.then(decide, done);
    else decide(found);
  };
}
