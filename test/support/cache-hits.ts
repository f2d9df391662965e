// Whether a repeated read was answered from the response cache (src/http/response-cache.ts). A
// change a test makes empties the caches at once, and again when its own invalidation notice comes
// back from the database, at a moment of its own: a pair of requests with an invalidation between
// them proves nothing either way, and is asked again.
import { expect } from 'vitest';
import type { AppContext } from '../../src/context.js';

/** Asks twice with no invalidation between, and expects the second answer from the cache. */
export async function askedTwiceFromCache<T>(apps: { context: AppContext }, ask: () => Promise<T>): Promise<[T, T]> {
  const { caches } = apps.context;
  const hits = () => caches.statistics().get('responses')?.hits ?? 0;
  for (let pair = 1; ; pair++) {
    const generation = caches.current;
    const first = await ask();
    const hitsBefore = hits();
    const again = await ask();
    if (caches.current === generation) {
      expect(hits(), 'the second answer came from the cache').toBe(hitsBefore + 1);
      return [first, again];
    }
    expect(pair, 'invalidations kept arriving between two requests').toBeLessThan(5);
  }
}
