// A Redis that hangs (SIGSTOP: connected, never answering) holds no request: the rate limits count
// in this process within a short timeout, /readyz and /metrics say so, readiness stays the
// database's, and the limits are shared again once Redis answers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_COMMAND_TIMEOUT_MS } from '../../src/rate-limit-store.js';
import { useTenant } from '../support/apps.js';
import { parsePrometheus } from '../support/prometheus.js';
import { type PrivateRedis, startPrivateRedis } from '../support/redis.js';
import { useService } from '../support/service.js';

let redis: PrivateRedis;
beforeAll(async () => {
  redis = await startPrivateRedis();
});
afterAll(() => redis?.stop());
const service = useService(() => ({
  env: {
    REDIS_URL: redis.url,
    REDIS_KEY_PREFIX: 'wt25-redis-stopped',
    RATE_LIMIT_PER_MINUTE: '1000',
    AUTH_FAILURE_LIMIT_PER_MINUTE: '5',
  },
}));
const tenant = useTenant(service);

const timed = async (request: () => Promise<Response>) => {
  const started = performance.now();
  const response = await request();
  await response.arrayBuffer();
  return { status: response.status, ms: performance.now() - started, response };
};

async function scrape(name: string): Promise<number> {
  const text = await (await fetch(`${service.urls.admin}/metrics`)).text();
  return parsePrometheus(text).value(name);
}

describe('a stopped Redis', () => {
  it('delays no request past its short timeout, and /readyz and /metrics say the limits are local', async () => {
    const read = () =>
      fetch(`${service.urls.integrations}/api/v1/countries/?limit=1`, {
        headers: { authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}` },
      });
    expect((await timed(read)).status).toBe(200);
    expect(await (await fetch(`${service.urls.integrations}/readyz`)).json()).toEqual({ status: 'ok' });

    redis.pause();
    try {
      const answers = [];
      for (let request = 0; request < 10; request++) answers.push(await timed(read));
      expect(answers.map((answer) => answer.status)).toEqual(Array(10).fill(200));
      // The first waits for the timeout; the others do not wait for Redis at all.
      expect(Math.max(...answers.map((answer) => answer.ms))).toBeLessThan(REDIS_COMMAND_TIMEOUT_MS + 1000);
      expect(answers[9].response.headers.get('ratelimit-remaining')).toBe(String(1000 - 10));

      // Failures are still bounded, counted in this process.
      const guesses = [];
      for (let guess = 0; guess < 6; guess++) {
        guesses.push(
          (
            await timed(() =>
              fetch(`${service.urls.integrations}/api/v1/countries/`, { headers: { authorization: 'Api-Key pis_x' } }),
            )
          ).status,
        );
      }
      expect(guesses).toEqual([401, 401, 401, 401, 401, 429]);

      const ready = await fetch(`${service.urls.integrations}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({
        status: 'ok',
        rate_limits: expect.stringContaining('Redis is not answering'),
      });
      expect(await scrape('rate_limit_store_degraded')).toBe(1);
      expect(await scrape('rate_limit_store_failures_total')).toBeGreaterThanOrEqual(1);
    } finally {
      redis.resume();
    }

    // Tried again after a pause: shared once more, and said so.
    let readiness: unknown;
    for (let tries = 0; tries < 100; tries++) {
      await timed(read);
      readiness = await (await fetch(`${service.urls.integrations}/readyz`)).json();
      if ((await scrape('rate_limit_store_degraded')) === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(readiness).toEqual({ status: 'ok' });
  });
});
