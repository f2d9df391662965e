// The circuit breaker's rule, a pure function: what each verdict does to each state.
import { describe, expect, it } from 'vitest';
import { type Breaker, CLOSED, nextBreaker } from '../../src/payments/delivery/breaker.js';

const policy = { failures: 3, coolDownSeconds: 10, maxCoolDownSeconds: 25 };

describe('the breaker of a payment endpoint', () => {
  it('opens at the end of a run of failures, not before', () => {
    let breaker: Breaker = CLOSED;
    const events: (string | null)[] = [];
    for (let failure = 0; failure < 3; failure++) {
      const next = nextBreaker(breaker, 'failing', policy);
      events.push(next.event);
      breaker = next.breaker;
    }
    expect(events).toEqual([null, null, 'opened']);
    expect(breaker).toEqual({ state: 'open', consecutiveFailures: 3, coolDownSeconds: 10 });
  });

  it('doubles the cool-down after a failed probe, up to the longest', () => {
    const probing: Breaker = { state: 'half_open', consecutiveFailures: 3, coolDownSeconds: 10 };
    const once = nextBreaker(probing, 'failing', policy);
    expect(once).toEqual({
      breaker: { state: 'open', consecutiveFailures: 4, coolDownSeconds: 20 },
      event: 'probe_failed',
    });
    const twice = nextBreaker({ ...once.breaker, state: 'half_open' }, 'failing', policy);
    expect(twice.breaker.coolDownSeconds).toBe(25);
  });

  it('closes at any sign of life, saying so only when it was not closed', () => {
    expect(nextBreaker({ state: 'open', consecutiveFailures: 5, coolDownSeconds: 20 }, 'alive', policy)).toEqual({
      breaker: CLOSED,
      event: 'closed',
    });
    expect(nextBreaker({ state: 'closed', consecutiveFailures: 2, coolDownSeconds: 0 }, 'alive', policy)).toEqual({
      breaker: CLOSED,
      event: null,
    });
  });

  it('only counts the failures of requests already under way when it opened', () => {
    const open: Breaker = { state: 'open', consecutiveFailures: 3, coolDownSeconds: 10 };
    expect(nextBreaker(open, 'failing', policy)).toEqual({ breaker: { ...open, consecutiveFailures: 4 }, event: null });
  });
});
