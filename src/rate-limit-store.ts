// Redis as the rate limits' shared store (src/http/rate-limit.ts), with its health.
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import type { Metrics } from './metrics.js';

/** A key's requests in its current window, and the milliseconds until the window ends. */
export interface Count {
  current: number;
  ttlMs: number;
}

/** One round trip per check: the count and the time left of the key's window. */
const REDIS_ADD = `
local current = redis.call('INCR', KEYS[1])
if current == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) return {current, tonumber(ARGV[1])} end
return {current, redis.call('PTTL', KEYS[1])}`;

type RedisWithLimits = Redis & {
  partnerRateLimitAdd(key: string, windowMs: number): Promise<[number, number]>;
};

/** How long Redis has to answer a command before the limits count in this process instead. */
export const REDIS_COMMAND_TIMEOUT_MS = 250;
/** After Redis failed or timed out, the time it is left alone before it is tried again. */
const REDIS_RETRY_AFTER_FAILURE_MS = 5000;

/**
 * Redis as the rate limits' shared store, with its health: after a command fails or times out,
 * the limits count in this process until Redis is tried again, so that no request waits on a
 * Redis that hangs (stopped, or a network that drops packets).
 */
export class RateLimitStore {
  readonly redis: RedisWithLimits;
  /** Since Redis last failed, until it answers again. */
  private degraded = false;
  /** Redis is left alone until then, once it has failed. */
  private retryAt = 0;

  constructor(
    redis: Redis,
    private readonly metrics: Metrics,
    private readonly logger: FastifyBaseLogger,
  ) {
    redis.defineCommand('partnerRateLimitAdd', { numberOfKeys: 1, lua: REDIS_ADD });
    this.redis = redis as RedisWithLimits;
    metrics.rateLimitStoreDegraded.set(0);
  }

  /** Why the limits are counted in this process now, or null while Redis answers. */
  degradation(): string | null {
    return this.degraded ? 'Redis is not answering: rate limits are counted in each process meanwhile' : null;
  }

  /** Counts `key` in Redis: null when Redis is failing or failed to answer in time. */
  async add(key: string, windowMs: number): Promise<Count | null> {
    if (this.degraded && Date.now() < this.retryAt) return null;
    try {
      const [current, ttlMs] = await this.redis.partnerRateLimitAdd(key, windowMs);
      if (this.degraded) this.recovered();
      return { current, ttlMs };
    } catch (error) {
      this.failed(error);
      return null;
    }
  }

  private failed(error: unknown): void {
    const timedOut = error instanceof Error && /timed out/i.test(error.message);
    this.metrics.rateLimitStoreFailures.inc({ reason: timedOut ? 'timeout' : 'error' });
    if (!this.degraded) {
      this.logger.warn(
        { err: error },
        'Redis did not answer: rate limits counted in this process until it does (see /readyz)',
      );
    }
    this.degraded = true;
    this.retryAt = Date.now() + REDIS_RETRY_AFTER_FAILURE_MS;
    this.metrics.rateLimitStoreDegraded.set(1);
  }

  private recovered(): void {
    this.degraded = false;
    this.metrics.rateLimitStoreDegraded.set(0);
    this.logger.info('Redis answers again: rate limits shared by every instance');
  }
}
