// Rate limits, checked by each host's authentication, not by route:
// - per credential: RATE_LIMIT_PER_MINUTE requests a minute for each accepted credential on the
//   integrations and backend hosts (the payment callback's partner API key included);
// - failed authentications: AUTH_FAILURE_LIMIT_PER_MINUTE a minute per client address and host
//   (an IPv6 address counts by its /64, every loopback address as one). Past the budget, further
//   failures from that address are answered 429. A valid credential is never refused for other
//   clients' failures: behind a shared address (a NAT, a proxy) that would let anyone lock every
//   partner out, while our 256-bit keys leave a right guess hopeless anyway.
// A window of RATE_LIMIT_WINDOW_SECONDS starts at a key's first request. Counters live in this
// process, or in Redis with REDIS_URL so that every instance shares them. A limit of 0 is off.
// Redis gets a short time to answer (REDIS_COMMAND_TIMEOUT_MS): a Redis that fails or hangs leaves
// the limits counted in this process meanwhile (said in /readyz and /metrics), never a request
// waiting on it.
//
// Our own counters, not @fastify/rate-limit's or rate-limiter-flexible's: theirs answer through a
// promise where a counter in this process is a map look-up answered in the same tick
// (src/http/cached-reads.ts), and their memory stores are not bounded in bytes.
import { isIPv4 } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ListenerName } from '../config.js';
import type { AppContext } from '../context.js';
import { AppError, ErrorCode } from '../errors.js';
import type { Count, RateLimitStore } from '../rate-limit-store.js';

/** The values of RateLimit-Limit, -Remaining and -Reset (seconds); none when no limit counts the request. */
export type LimitValues = readonly number[];

export interface RateLimitGuard {
  /** A credential was refused: counted against the client's address; past the budget, refused. */
  authenticationFailed(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  /** A credential was accepted: counted against its own budget, whose state every answer carries. */
  authenticated(request: FastifyRequest, reply: FastifyReply, credentialId: string): Promise<void>;
  /**
   * `authenticated`, for a request answered before routing (src/http/cached-reads.ts): the
   * RateLimit header values its answer carries, or null when over the limit. Fastify then answers
   * the refusal, counting the request once more: it is over the limit either way. Answered at once
   * when the counters are in this process.
   */
  admit(credentialId: string): LimitValues | null | Promise<LimitValues | null>;
}

interface Counters {
  /** Counts one more request for `key`. */
  add(key: string): Count | Promise<Count>;
}

/** What a key's counter costs in this process, with its map slot. */
export const LOCAL_COUNTER_BYTES = 250;
/** Counters kept in this process per limit: what is over it loses its oldest windows first. */
const LOCAL_COUNTERS_MAX_BYTES = 4 * 1024 * 1024;

/** Counters in this process, bounded in bytes (exported for its tests). */
export class LocalCounters implements Counters {
  private readonly windows = new Map<string, { count: number; endsAt: number }>();

  constructor(
    private readonly windowMs: number,
    private readonly maxBytes = LOCAL_COUNTERS_MAX_BYTES,
  ) {}

  add(key: string): Count {
    const now = Date.now();
    let window = this.windows.get(key);
    if (!window || window.endsAt <= now) {
      window = { count: 0, endsAt: now + this.windowMs };
      this.keep(key, window);
    }
    window.count++;
    return { current: window.count, ttlMs: window.endsAt - now };
  }

  /** The count of `key`, without counting. */
  read(key: string): Count {
    const now = Date.now();
    const window = this.windows.get(key);
    return window && window.endsAt > now ? { current: window.count, ttlMs: window.endsAt - now } : NO_REQUESTS;
  }

  private keep(key: string, window: { count: number; endsAt: number }): void {
    // A new window goes last: Maps iterate in insertion order, so the first entries are the
    // windows that began first, ended ones among them. When full, they go: one per new window.
    this.windows.delete(key);
    for (const oldest of this.windows.keys()) {
      if ((this.windows.size + 1) * LOCAL_COUNTER_BYTES <= this.maxBytes) break;
      this.windows.delete(oldest);
    }
    this.windows.set(key, window);
  }
}

const NO_REQUESTS: Count = { current: 0, ttlMs: 0 };

/** Counters in Redis, and in this process while Redis does not answer. */
class SharedCounters implements Counters {
  private readonly insurance: LocalCounters;

  constructor(
    private readonly store: RateLimitStore,
    private readonly prefix: string,
    private readonly windowMs: number,
  ) {
    this.insurance = new LocalCounters(windowMs);
  }

  async add(key: string): Promise<Count> {
    return (await this.store.add(this.prefix + key, this.windowMs)) ?? this.insurance.add(key);
  }
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

/** The draft standard's header values for a limit of `max` after `count`: limit, remaining, reset. */
function limitValues(max: number, count: Count): LimitValues {
  return [max, Math.max(0, max - count.current), Math.ceil(count.ttlMs / 1000)];
}

/** RateLimit-Limit, -Remaining and -Reset, in the order of LimitValues. */
export const LIMIT_HEADER_NAMES = ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'] as const;

function headersOf(values: LimitValues): Record<string, number> {
  return { [LIMIT_HEADER_NAMES[0]]: values[0], [LIMIT_HEADER_NAMES[1]]: values[1], [LIMIT_HEADER_NAMES[2]]: values[2] };
}

function refuse(reply: FastifyReply, values: LimitValues): never {
  reply.headers(headersOf(values)).header('retry-after', Math.max(1, values[2]));
  throw new AppError(ErrorCode.RATE_LIMITED);
}

/** `then` for a value that may be there already: answered in the same tick when it is. */
function settle<T, R>(value: T | Promise<T>, next: (value: T) => R): R | Promise<R> {
  return value instanceof Promise ? value.then(next) : next(value);
}

export function registerRateLimits(
  { config, rateLimitStore, metrics }: AppContext,
  listener: ListenerName,
): RateLimitGuard {
  const windowMs = config.rateLimitWindowSeconds * 1000;
  /** Counters for a limit of `max` (null when 0: off). */
  const counters = (name: string, max: number): Counters | null => {
    if (max <= 0) return null;
    if (rateLimitStore) {
      return new SharedCounters(rateLimitStore, `${config.redisKeyPrefix}:rate-limit:${name}:`, windowMs);
    }
    return new LocalCounters(windowMs);
  };
  const maxPerCredential = config.rateLimitPerMinute;
  const maxFailures = config.authFailureLimitPerMinute;
  const perCredential = counters('credential', maxPerCredential);
  const authFailures = counters('auth', maxFailures);
  const limited = (limit: 'credential' | 'auth_failures') => metrics.rateLimited.inc({ listener, limit });

  return {
    async authenticationFailed(request, reply) {
      if (!authFailures) return;
      const count = await authFailures.add(`${listener}:${addressKey(request.ip)}`);
      if (count.current > maxFailures) {
        limited('auth_failures');
        refuse(reply, limitValues(maxFailures, count));
      }
    },
    async authenticated(request, reply, credentialId) {
      if (!perCredential) return;
      const count = await perCredential.add(credentialId);
      const values = limitValues(maxPerCredential, count);
      if (count.current > maxPerCredential) {
        limited('credential');
        refuse(reply, values);
      }
      reply.headers(headersOf(values));
    },
    admit(credentialId) {
      if (!perCredential) return NO_LIMIT;
      return settle(perCredential.add(credentialId), (count) =>
        count.current > maxPerCredential ? null : limitValues(maxPerCredential, count),
      );
    },
  };
}

/** Admitted without a per-credential limit: no RateLimit headers. */
const NO_LIMIT: LimitValues = [];
