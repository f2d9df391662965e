// Rate limits, checked by each host's authentication, not by route:
// - per credential: RATE_LIMIT_PER_MINUTE requests a minute for each accepted credential on the
//   integrations and backend hosts (the payment callback's partner API key included);
// - failed authentications: AUTH_FAILURE_LIMIT_PER_MINUTE a minute per client address and host
//   (an IPv6 address counts by its /64, every loopback address as one). Past the budget, further
//   failures from that address are answered 429. A valid credential is never refused for other
//   clients' failures: behind a shared address (a NAT, a proxy) that would let anyone lock every
//   partner out, while our 256-bit keys leave a right guess hopeless anyway.
// A window of RATE_LIMIT_WINDOW_SECONDS starts at a key's first request. The counters are
// rate-limiter-flexible's: in this process, or in Redis with REDIS_URL so that every instance
// shares them (src/rate-limit-store.ts: a Redis that fails or hangs leaves them counted in this
// process meanwhile, never a request waiting on it). A limit of 0 is off.
import { isIPv4 } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { RateLimiterRes } from 'rate-limiter-flexible';
import type { ListenerName } from '../config.js';
import type { AppContext } from '../context.js';
import { AppError, ErrorCode } from '../errors.js';
import { inProcessLimiter, type Limiter, type LimitOptions } from '../rate-limit-store.js';

/** A request of a credential, counted against its budget. */
interface CredentialCount {
  /** The RateLimit headers of its answer (and Retry-After when refused). */
  headers: Readonly<Record<string, number>>;
  /** Past the limit: the request is answered 429. */
  refused: boolean;
}

export interface RateLimitGuard {
  /** A credential was refused: counted against the client's address; past the budget, refused. */
  authenticationFailed(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  /** A credential was accepted: counted against its own budget, whose state every answer carries. */
  authenticated(request: FastifyRequest, reply: FastifyReply, credentialId: string): Promise<void>;
}

/**
 * The key a client address is counted under: an IPv6 address by its /64 (one subscriber's whole
 * network, which it can walk through freely), every loopback address as one client, an IPv4 address
 * (mapped into IPv6 or not) as itself.
 */
export function addressKey(ip: string): string {
  const address = ip.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
  if (isIPv4(address)) return address.startsWith('127.') ? 'loopback' : address;
  if (address === '::1') return 'loopback';
  const [head, tail = null] = address.replace(/%.*$/, '').toLowerCase().split('::');
  const groups = head ? head.split(':') : [];
  if (tail !== null && groups.length < 4) {
    // `::` stands for as many zero groups as make eight (an IPv4 tail counts as two).
    const tailGroups = tail ? tail.split(':').reduce((count, part) => count + (part.includes('.') ? 2 : 1), 0) : 0;
    groups.push(...Array(8 - groups.length - tailGroups).fill('0'), ...(tail ? tail.split(':') : []));
  }
  return `${groups
    .slice(0, 4)
    .map((group) => group.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/**
 * Client addresses whose failures are counted apart in one window. Each counter costs memory (and,
 * in this process, a timer) for a whole window, and addresses are many (an IPv6 network holds
 * thousands of /64s): past this, the failures of further addresses share one counter, so that
 * failing from many addresses at once refuses failures sooner, never valid credentials, and
 * never grows the process.
 */
export const MAX_FAILING_ADDRESSES = 16_384;
/** The key of that shared counter. */
export const MANY_ADDRESSES_KEY = 'many-addresses';

/**
 * How many addresses have a counter now, at most: the counters started in this window and the
 * last (none outlives its window).
 */
export class FailingAddresses {
  private started = 0;
  private startedBefore = 0;
  private windowEndsAt = 0;

  constructor(private readonly windowMs: number) {}

  /** The key `address`'s failures are counted under. */
  keyOf(address: string): string {
    const now = Date.now();
    if (now >= this.windowEndsAt) {
      this.startedBefore = now - this.windowEndsAt < this.windowMs ? this.started : 0;
      this.started = 0;
      this.windowEndsAt = now + this.windowMs;
    }
    return this.started + this.startedBefore < MAX_FAILING_ADDRESSES ? address : MANY_ADDRESSES_KEY;
  }

  /** A failure was counted: a new counter when it was the first of its window. */
  counted(count: RateLimiterRes): void {
    if (count.isFirstInDuration) this.started++;
  }
}

/** RateLimit-Limit, -Remaining and -Reset (seconds) of a limit of `max` after `count`. */
function limitHeaders(max: number, count: RateLimiterRes): Record<string, number> {
  return {
    'ratelimit-limit': max,
    'ratelimit-remaining': Math.max(0, max - count.consumedPoints),
    'ratelimit-reset': Math.ceil(count.msBeforeNext / 1000),
  };
}

/** The same, with Retry-After, for a request refused by that limit. */
function refusalHeaders(max: number, count: RateLimiterRes): Record<string, number> {
  const headers = limitHeaders(max, count);
  return { ...headers, 'retry-after': Math.max(1, headers['ratelimit-reset']) };
}

/** The rate limits of one host. */
export function rateLimitGuard(
  { config, rateLimitStore, metrics }: AppContext,
  listener: ListenerName,
): RateLimitGuard {
  const durationSeconds = config.rateLimitWindowSeconds;
  const limiter = (name: string, points: number): Limiter | null => {
    if (points <= 0) return null;
    const options: LimitOptions = { keyPrefix: `${config.redisKeyPrefix}:rate-limit:${name}`, points, durationSeconds };
    return rateLimitStore ? rateLimitStore.limiter(options) : inProcessLimiter(options);
  };
  const maxPerCredential = config.rateLimitPerMinute;
  const maxFailures = config.authFailureLimitPerMinute;
  const perCredential = limiter('credential', maxPerCredential);
  const authFailures = limiter('auth', maxFailures);
  const failingAddresses = new FailingAddresses(durationSeconds * 1000);
  /** A refusal of `limit` as our 429, counted in the metrics. */
  const refuse = (reply: FastifyReply, limit: 'credential' | 'auth_failures', headers: Record<string, number>) => {
    metrics.rateLimited.inc({ listener, limit });
    reply.headers(headers);
    throw new AppError(ErrorCode.RATE_LIMITED);
  };
  const countCredential = (credentialId: string): Promise<CredentialCount> => {
    if (!perCredential) return NOTHING_TO_COUNT;
    return perCredential.consume(credentialId).then(
      (count) => ({ headers: limitHeaders(maxPerCredential, count), refused: false }),
      (refusal: unknown) => {
        // Anything but the limiter's refusal goes on as it is.
        if (!(refusal instanceof RateLimiterRes)) throw refusal;
        return { headers: refusalHeaders(maxPerCredential, refusal), refused: true };
      },
    );
  };

  return {
    async authenticationFailed(request, reply) {
      if (!authFailures) return;
      const key = `${listener}:${failingAddresses.keyOf(addressKey(request.ip))}`;
      await authFailures.consume(key).then(
        (count) => failingAddresses.counted(count),
        (refusal: unknown) => {
          if (!(refusal instanceof RateLimiterRes)) throw refusal;
          refuse(reply, 'auth_failures', refusalHeaders(maxFailures, refusal));
        },
      );
    },
    authenticated(_request, reply, credentialId) {
      return countCredential(credentialId).then(({ headers, refused }) => {
        if (refused) refuse(reply, 'credential', headers);
        else reply.headers(headers);
      });
    },
  };
}

const NOTHING_TO_COUNT: Promise<CredentialCount> = Promise.resolve({ headers: {}, refused: false });
