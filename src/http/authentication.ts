// A host's one authenticator, run by every request it authenticates: the credential presented
// (from the credential cache in the same tick when it is there, from the database when not), then
// the rate limits. A callback-style onRequest hook: a cached credential costs no promise of ours.
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { Caches } from '../cache.js';
import type { LookedUp } from '../tenants/index.js';
import type { CredentialCount, RateLimitGuard } from './rate-limit.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Whose answers its credential may be given (see `CredentialCheck.audienceOf`). */
    audience: string;
  }
}

export interface CredentialCheck<C> {
  /** The credential an Authorization header presents, null when none is valid. */
  lookUp(authorization: string | undefined): LookedUp<C | null>;
  /** What its rate limit counts: the credential's id. */
  idOf(credential: C): string;
  /** Whose answers it may be given: part of the key of a cached response. */
  audienceOf(credential: C): string;
  /** Whether it may read what needs `scope` (routes without one need none). */
  grants(credential: C, scope: string | undefined): boolean;
  /** The error answering a request without a valid credential. */
  refusal(request: FastifyRequest, reply: FastifyReply): Error;
  /** Within the limits: the request takes its credential; an error when the route refuses it anyway. */
  accept(request: FastifyRequest, credential: C): Error | undefined;
}

/**
 * How long a connection's credential stands for the same Authorization header on that connection:
 * shorter than the credential cache's own lifetime, so a key revoked on another instance is
 * refused no later than before.
 */
const CONNECTION_CREDENTIAL_MS = 250;

interface Presented<C> {
  authorization: string;
  credential: C;
  generation: number;
  until: number;
}

/**
 * A host's credential check with what each connection presented last. A keep-alive client sends
 * the same key on every request: its digest and cache look-up are made once, not per request, and
 * any change to credentials or tenants here ends what was remembered at once (the caches'
 * generation). The header is compared only with the one sent before on the same connection.
 */
export class HostCredentials<C> {
  private readonly presented = new WeakMap<object, Presented<C>>();

  constructor(
    private readonly caches: Caches,
    readonly check: CredentialCheck<C>,
  ) {}

  /** The credential `authorization` presents on `connection`, null when none is valid. */
  lookUp(connection: object, authorization: string | undefined): LookedUp<C | null> {
    const now = Date.now();
    const generation = this.caches.current;
    const last = this.presented.get(connection);
    if (last && last.authorization === authorization && last.generation === generation && now < last.until) {
      return last.credential;
    }
    const found = this.check.lookUp(authorization);
    if (found !== null && !(found instanceof Promise) && authorization !== undefined) {
      this.presented.set(connection, {
        authorization,
        credential: found,
        generation,
        until: now + CONNECTION_CREDENTIAL_MS,
      });
    }
    return found;
  }
}

export function authenticator<C>(limits: RateLimitGuard, credentials: HostCredentials<C>): onRequestHookHandler {
  const { check } = credentials;
  return (request, reply, done) => {
    const decide = (credential: C | null) => {
      if (credential === null) {
        limits.authenticationFailed(request, reply).then(() => done(check.refusal(request, reply)), done);
      } else {
        request.audience = check.audienceOf(credential);
        limits
          .authenticated(request, reply, check.idOf(credential))
          .then(() => done(check.accept(request, credential)), done);
      }
    };
    const found = credentials.lookUp(request.raw.socket, request.headers.authorization);
    if (found instanceof Promise) found.then(decide, done);
    else decide(found);
  };
}

/** A credential as a request not routed yet needs it. */
export interface ReadCredential {
  audience: string;
  grants(scope: string | undefined): boolean;
  /** Counts the request against the credential's rate limit. */
  count(): Promise<CredentialCount>;
}

/**
 * The same check for a request not routed yet: the credential of an Authorization header when the
 * credential cache has it now; null otherwise (not there yet, or not valid), and Fastify decides.
 */
export function cachedCredential<C>(
  limits: RateLimitGuard,
  credentials: HostCredentials<C>,
): (connection: object, authorization: string | undefined) => ReadCredential | null {
  const { check } = credentials;
  return (connection, authorization) => {
    const credential = credentials.lookUp(connection, authorization);
    if (credential === null || credential instanceof Promise) return null;
    return {
      audience: check.audienceOf(credential),
      grants: (scope) => check.grants(credential, scope),
      count: () => limits.countCredential(check.idOf(credential)),
    };
  };
}
