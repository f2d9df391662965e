// The rate-limit counters kept in this process (src/http/rate-limit.ts): bounded in bytes, they
// lose the windows that began first, and only those. Through HTTP, test/observability/rate-limits.test.ts.
import { describe, expect, it, vi } from 'vitest';
import { LOCAL_COUNTER_BYTES, LocalCounters } from '../../src/http/rate-limit.js';

const WINDOW_MS = 60_000;

describe('rate-limit counters in this process', () => {
  it('keep at most their bound, losing the windows that began first', () => {
    const counters = new LocalCounters(WINDOW_MS, 3 * LOCAL_COUNTER_BYTES);
    for (const key of ['a', 'b', 'c']) counters.add(key);
    counters.add('a');
    expect(counters.read('a').current).toBe(2);
    // Counted again, a's window still began first: it goes first, then b's.
    counters.add('d');
    expect(['a', 'b', 'c', 'd'].map((key) => counters.read(key).current)).toEqual([0, 1, 1, 1]);
    counters.add('e');
    expect(['a', 'b', 'c', 'd', 'e'].map((key) => counters.read(key).current)).toEqual([0, 0, 1, 1, 1]);
  });

  it('start a new window, placed last, once the old one ended', () => {
    vi.useFakeTimers({ now: 1_000_000 });
    try {
      const counters = new LocalCounters(WINDOW_MS, 3 * LOCAL_COUNTER_BYTES);
      counters.add('a');
      counters.add('a');
      vi.advanceTimersByTime(WINDOW_MS / 2);
      counters.add('b');
      expect(counters.read('a')).toEqual({ current: 2, ttlMs: WINDOW_MS / 2 });
      vi.advanceTimersByTime(WINDOW_MS / 2);
      expect(counters.read('a').current).toBe(0);
      expect(counters.add('a')).toEqual({ current: 1, ttlMs: WINDOW_MS });
      // a's new window began after b's: b goes first.
      counters.add('c');
      counters.add('d');
      expect(['a', 'b', 'c', 'd'].map((key) => counters.read(key).current)).toEqual([1, 0, 1, 1]);
    } finally {
      vi.useRealTimers();
    }
  });
});
