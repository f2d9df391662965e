// Rate limits, checked by each host's authentication, not by route:
// - per credential: RATE_LIMIT_PER_MINUTE requests a minute for each accepted credential on the
//   integrations and backend hosts (the payment callback's partner API key included);
// - failed authentications: AUTH_FAILURE_LIMIT_PER_MINUTE a minute per client address and host.
//   The failure that goes over the budget, and every request needing a credential from that
//   address until the window ends, is answered 429 before any credential is looked at: guessing
//   keys slows to the budget, and a guess that happens to be right is not told apart.
// A window of RATE_LIMIT_WINDOW_SECONDS starts at a key's first request. Counters live in this
// process, or in Redis with REDIS_URL so that every instance shares them. A limit of 0 is off. A
// Redis outage lets requests through rather than refuse all.
//
// Our own counters, not @fastify/rate-limit's (the same windows, headers and Redis script): its
// promise chain cost a cached read ~7 µs of its ~60 (two checks a request), where a counter in
// this process is a map look-up answered in the same tick (src/http/cached-reads.ts).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import type { ListenerName } from '../config.js';
import type { AppContext } from '../context.js';
import { AppError, ErrorCode } from '../errors.js';

/** The values of RateLimit-Limit, -Remaining and -Reset (seconds); none when no limit counts the request. */
export type LimitValues = readonly number[];

export interface RateLimitGuard {
  /** Before a credential is checked: an address over its failure budget is refused. */
  beforeAuthentication(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  /** A credential was refused: counted against the address; the one over the budget is refused. */
  authenticationFailed(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  /** A credential was accepted: counted against its own budget, whose state every answer carries. */
  authenticated(request: FastifyRequest, reply: FastifyReply, credentialId: string): Promise<void>;
  /**
   * `beforeAuthentication` then `authenticated`, for a request answered before routing
   * (src/http/cached-reads.ts): the RateLimit header values its answer carries, or null when a limit
   * refuses it. Fastify then answers the refusal, counting the request once more: it is over the
   * limit either way. Answered at once when the counters are in this process.
   */
  admit(ip: string, credentialId: string): LimitValues | null | Promise<LimitValues | null>;
}

/** A key's requests in its current window, and the milliseconds until the window ends. */
interface Count {
  current: number;
  ttlMs: number;
}

interface Counters {
  /** Counts one more request for `key`. */
  add(key: string): Count | Promise<Count>;
  /** The count of `key`, without counting. */
  read(key: string): Count | Promise<Count>;
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

/** One round trip per check: the count and the time left of the key's window. */
const REDIS_ADD = `
local current = redis.call('INCR', KEYS[1])
if current == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) return {current, tonumber(ARGV[1])} end
return {current, redis.call('PTTL', KEYS[1])}`;
const REDIS_READ = `
local current = redis.call('GET', KEYS[1])
if not current then return {0, 0} end
return {tonumber(current), math.max(redis.call('PTTL', KEYS[1]), 0)}`;

type RedisWithLimits = Redis & {
  partnerRateLimitAdd(key: string, windowMs: number): Promise<[number, number]>;
  partnerRateLimitRead(key: string): Promise<[number, number]>;
};

class RedisCounters implements Counters {
  private readonly redis: RedisWithLimits;

  constructor(
    redis: Redis,
    private readonly prefix: string,
    private readonly windowMs: number,
  ) {
    if (!('partnerRateLimitAdd' in redis)) {
      redis.defineCommand('partnerRateLimitAdd', { numberOfKeys: 1, lua: REDIS_ADD });
      redis.defineCommand('partnerRateLimitRead', { numberOfKeys: 1, lua: REDIS_READ });
    }
    this.redis = redis as RedisWithLimits;
  }

  add(key: string): Promise<Count> {
    return this.counted(this.redis.partnerRateLimitAdd(this.prefix + key, this.windowMs));
  }

  read(key: string): Promise<Count> {
    return this.counted(this.redis.partnerRateLimitRead(this.prefix + key));
  }

  private counted(reply: Promise<[number, number]>): Promise<Count> {
    // Redis unavailable: nothing is counted, nothing refused (the outage is logged by its client).
    return reply.then(
      ([current, ttlMs]) => ({ current, ttlMs }),
      () => NO_REQUESTS,
    );
  }
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

export function registerRateLimits({ config, redis, metrics }: AppContext, listener: ListenerName): RateLimitGuard {
  const windowMs = config.rateLimitWindowSeconds * 1000;
  /** Counters for a limit of `max` (null when 0: off). */
  const counters = (name: string, max: number): Counters | null => {
    if (max <= 0) return null;
    if (redis) return new RedisCounters(redis, `${config.redisKeyPrefix}:rate-limit:${name}:`, windowMs);
    return new LocalCounters(windowMs);
  };
  const maxPerCredential = config.rateLimitPerMinute;
  const maxFailures = config.authFailureLimitPerMinute;
  const perCredential = counters('credential', maxPerCredential);
  const authFailures = counters('auth', maxFailures);
  const limited = (limit: 'credential' | 'auth_failures') => metrics.rateLimited.inc({ listener, limit });
  const addressKey = (ip: string) => `${listener}:${ip}`;

  /** An address over its failure budget is refused, whatever credential it presents: its limit's values then. */
  const addressRefusal = (ip: string): LimitValues | null | Promise<LimitValues | null> =>
    authFailures
      ? settle(authFailures.read(addressKey(ip)), (count) =>
          count.current > maxFailures ? limitValues(maxFailures, count) : null,
        )
      : null;

  return {
    async beforeAuthentication(request, reply) {
      const refusal = await addressRefusal(request.ip);
      if (refusal) {
        limited('auth_failures');
        refuse(reply, refusal);
      }
    },
    async authenticationFailed(request, reply) {
      if (!authFailures) return;
      const count = await authFailures.add(addressKey(request.ip));
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
    admit(ip, credentialId) {
      const counted = () =>
        perCredential
          ? settle(perCredential.add(credentialId), (count) =>
              count.current > maxPerCredential ? null : limitValues(maxPerCredential, count),
            )
          : NO_LIMIT;
      const refusal = addressRefusal(ip);
      if (refusal instanceof Promise) return refusal.then((over) => (over ? null : counted()));
      return refusal ? null : counted();
    },
  };
}

/** Admitted without a per-credential limit: no RateLimit headers. */
const NO_LIMIT: LimitValues = [];
