// Rate limits, checked by each host's authentication, not by route:
// - per credential: RATE_LIMIT_PER_MINUTE requests a minute for each accepted credential on the
//   integrations and backend hosts (the payment callback's partner API key included);
// - per credential and route budget: a route whose requests make rows and outgoing calls at the
//   partner's will names a smaller budget of its own (`config: { rateLimitBudget }`), counted
//   besides the host's: RATE_LIMIT_TEST_INVOICES_PER_MINUTE, RATE_LIMIT_PINGS_PER_MINUTE;
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

/** The smaller budgets a route may name, each counted per credential besides the host's. */
export type RouteBudget = 'test_invoices' | 'pings';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's requests also count against this budget of the credential's. */
    rateLimitBudget?: RouteBudget;
  }
}

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

/** Of two answers' RateLimit headers, those of the budget nearer its end: the headers describe one limit. */
function nearerTheEnd(host: Record<string, number>, route: Record<string, number>): Record<string, number> {
  return (route['ratelimit-remaining'] ?? Infinity) < (host['ratelimit-remaining'] ?? Infinity) ? route : host;
}

/** A budget counted by rate-limiter-flexible: its limiter and its size. */
interface Budget {
  limiter: Limiter;
  max: number;
}

/** The rate limits of one host. */
export function rateLimitGuard(
  { config, rateLimitStore, metrics }: AppContext,
  listener: ListenerName,
): RateLimitGuard {
  const durationSeconds = config.rateLimitWindowSeconds;
  const budget = (name: string, points: number): Budget | null => {
    if (points <= 0) return null;
    const options: LimitOptions = { keyPrefix: `${config.redisKeyPrefix}:rate-limit:${name}`, points, durationSeconds };
    return { limiter: rateLimitStore ? rateLimitStore.limiter(options) : inProcessLimiter(options), max: points };
  };
  const perCredential = budget('credential', config.rateLimitPerMinute);
  const authFailures = budget('auth', config.authFailureLimitPerMinute);
  const routeBudgets: Record<RouteBudget, Budget | null> = {
    test_invoices: budget('test-invoices', config.routeBudgets.testInvoicesPerMinute),
    pings: budget('pings', config.routeBudgets.pingsPerMinute),
  };
  const failingAddresses = new FailingAddresses(durationSeconds * 1000);
  /** A refusal of `limit` as our 429, counted in the metrics. */
  const refuse = (
    reply: FastifyReply,
    limit: 'credential' | 'auth_failures' | RouteBudget,
    headers: Record<string, number>,
  ) => {
    metrics.rateLimited.inc({ listener, limit });
    reply.headers(headers);
    throw new AppError(ErrorCode.RATE_LIMITED);
  };
  /** Counts a request of `key` against `counted`. */
  const count = (counted: Budget | null, key: string): Promise<CredentialCount> => {
    if (!counted) return NOTHING_TO_COUNT;
    return counted.limiter.consume(key).then(
      (spent) => ({ headers: limitHeaders(counted.max, spent), refused: false }),
      (refusal: unknown) => {
        // Anything but the limiter's refusal goes on as it is.
        if (!(refusal instanceof RateLimiterRes)) throw refusal;
        return { headers: refusalHeaders(counted.max, refusal), refused: true };
      },
    );
  };
  const countCredential = (credentialId: string) => count(perCredential, credentialId);

  return {
    async authenticationFailed(request, reply) {
      if (!authFailures) return;
      const key = `${listener}:${failingAddresses.keyOf(addressKey(request.ip))}`;
      await authFailures.limiter.consume(key).then(
        (spent) => failingAddresses.counted(spent),
        (refusal: unknown) => {
          if (!(refusal instanceof RateLimiterRes)) throw refusal;
          refuse(reply, 'auth_failures', refusalHeaders(authFailures.max, refusal));
        },
      );
    },
    authenticated(request, reply, credentialId) {
      const named = request.routeOptions.config.rateLimitBudget;
      return countCredential(credentialId).then(({ headers, refused }) => {
        if (refused) refuse(reply, 'credential', headers);
        if (!named) {
          reply.headers(headers);
          return;
        }
        // Counted only once the host's budget let the request through.
        return count(routeBudgets[named], credentialId).then((route) => {
          if (route.refused) refuse(reply, named, route.headers);
          reply.headers(nearerTheEnd(headers, route.headers));
        });
      });
    },
  };
}

const NOTHING_TO_COUNT: Promise<CredentialCount> = Promise.resolve({ headers: {}, refused: false });
