// Redis as the rate limits' shared store (src/http/rate-limit.ts), with its health: a limit is
// counted by rate-limiter-flexible in Redis, and in this process by its insurance while Redis fails
// or hangs. The insurance is called here rather than through the library's `insuranceLimiter`
// option, which hides the failure: we count it, say it in /readyz and /metrics, and leave Redis
// alone for a while so that no request waits on it again.
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Metrics } from './metrics.js';

/** A limit of `points` per window of `durationSeconds`, its counters named by `keyPrefix`. */
export interface LimitOptions {
  keyPrefix: string;
  points: number;
  durationSeconds: number;
}

/** rate-limiter-flexible's answer: resolved under the limit, rejected with a RateLimiterRes over it. */
export interface Limiter {
  consume(key: string): Promise<RateLimiterRes>;
}

/** How long Redis has to answer a command before the limits count in this process instead. */
export const REDIS_COMMAND_TIMEOUT_MS = 250;
/** After Redis failed or timed out, the time it is left alone before it is tried again. */
const REDIS_RETRY_AFTER_FAILURE_MS = 5000;

/** A limit counted in this process. */
export const inProcessLimiter = ({ keyPrefix, points, durationSeconds }: LimitOptions): Limiter =>
  new RateLimiterMemory({ keyPrefix, points, duration: durationSeconds });

export class RateLimitStore {
  /** Since Redis last failed, until it answers again. */
  private degraded = false;
  /** Redis is left alone until then, once it has failed. */
  private retryAt = 0;

  constructor(
    readonly redis: Redis,
    private readonly metrics: Metrics,
    private readonly logger: FastifyBaseLogger,
  ) {
    metrics.rateLimitStoreDegraded.set(0);
  }

  /** Why the limits are counted in this process now, or null while Redis answers. */
  degradation(): string | null {
    return this.degraded ? 'Redis is not answering: rate limits are counted in each process meanwhile' : null;
  }

  /** A limit counted in Redis, shared by every instance; in this process while Redis does not answer. */
  limiter(options: LimitOptions): Limiter {
    const shared = new RateLimiterRedis({
      storeClient: this.redis,
      keyPrefix: options.keyPrefix,
      points: options.points,
      duration: options.durationSeconds,
      // A closed connection is a failure at once, not a command waiting for its timeout.
      rejectIfRedisNotReady: true,
    });
    const insurance = inProcessLimiter(options);
    return {
      consume: (key) => {
        if (this.degraded && Date.now() < this.retryAt) return insurance.consume(key);
        return shared.consume(key).then(
          (counted) => {
            if (this.degraded) this.recovered();
            return counted;
          },
          (refusal: unknown) => {
            if (refusal instanceof RateLimiterRes) {
              if (this.degraded) this.recovered();
              throw refusal;
            }
            this.failed(refusal);
            return insurance.consume(key);
          },
        );
      },
    };
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
