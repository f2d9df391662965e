// The auth-failure counters are bounded (src/http/rate-limit.ts): each client address has its own
// until many addresses fail in one window, after which further addresses share one counter.
// Through HTTP, test/observability/rate-limits.test.ts.
import { RateLimiterRes } from 'rate-limiter-flexible';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FailingAddresses, MANY_ADDRESSES_KEY, MAX_FAILING_ADDRESSES } from '../../src/http/rate-limit.js';

const WINDOW_MS = 60_000;
const started = new RateLimiterRes(0, WINDOW_MS, 1, true);

/** Counts a first failure for `count` addresses, as the limiter would. */
function failFrom(addresses: FailingAddresses, count: number, prefix: string): string[] {
  const keys = [];
  for (let index = 0; index < count; index++) {
    keys.push(addresses.keyOf(`${prefix}${index}`));
    addresses.counted(started);
  }
  return keys;
}

describe('failing addresses', () => {
  beforeEach(() => vi.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => vi.useRealTimers());

  it('are counted apart up to the bound, then share one counter', () => {
    const addresses = new FailingAddresses(WINDOW_MS);
    const keys = failFrom(addresses, MAX_FAILING_ADDRESSES + 2, 'a');
    expect(keys.slice(0, MAX_FAILING_ADDRESSES).every((key, index) => key === `a${index}`)).toBe(true);
    expect(keys.slice(MAX_FAILING_ADDRESSES)).toEqual([MANY_ADDRESSES_KEY, MANY_ADDRESSES_KEY]);
  });

  it('count the counters of the last window until they have ended, then get their own again', () => {
    const addresses = new FailingAddresses(WINDOW_MS);
    failFrom(addresses, MAX_FAILING_ADDRESSES, 'a');
    vi.advanceTimersByTime(WINDOW_MS);
    // The last window's counters may still run: new addresses share one.
    expect(addresses.keyOf('b')).toBe(MANY_ADDRESSES_KEY);
    vi.advanceTimersByTime(WINDOW_MS);
    expect(addresses.keyOf('b')).toBe('b');
  });
});
