// Every in-process cache is bounded in bytes (src/cache.ts): least recently used entries go first,
// a value larger than the bound is never kept, and a change drops what depends on it.
import { describe, expect, it } from 'vitest';
import { Caches } from '../src/cache.js';

const KIB = 1024;

function textCache(maxBytes: number, keyedByVersion = false, caches = new Caches()) {
  const loads: string[] = [];
  const cache = caches.cache<string>({
    name: 'test',
    ttlMs: Number.POSITIVE_INFINITY,
    maxBytes,
    sizeOf: (text) => text.length,
    keyedByVersion,
  });
  const get = (key: string, size = 10 * KIB) =>
    cache.get(key, async () => {
      loads.push(key);
      return 'x'.repeat(size);
    });
  return { cache, caches, loads, get };
}

describe('ShortLivedCache', () => {
  it('keeps within its bound in bytes, dropping the least recently used first', async () => {
    const { cache, loads, get } = textCache(35 * KIB);
    for (const key of ['a', 'b', 'c']) await get(key);
    await get('a'); // now the most recently used
    await get('d'); // over the bound: b goes
    expect(cache.bytes).toBeLessThanOrEqual(35 * KIB);
    loads.length = 0;
    for (const key of ['a', 'c', 'd']) await get(key);
    expect(loads).toEqual([]);
    await get('b');
    expect(loads).toEqual(['b']);
  });

  it('serves a value larger than the whole bound without keeping it', async () => {
    const { cache, loads, get } = textCache(5 * KIB);
    await get('small', KIB);
    expect((await get('huge', 50 * KIB)).length).toBe(50 * KIB);
    await get('huge', 50 * KIB);
    expect(loads).toEqual(['small', 'huge', 'huge']);
    expect(cache.bytes).toBeLessThanOrEqual(5 * KIB);
    await get('small', KIB);
    expect(loads).toHaveLength(3);
  });

  it('drops entries on a change, unless their keys name the version they come from', async () => {
    const plain = textCache(100 * KIB);
    const versioned = textCache(100 * KIB, true);
    await plain.get('k');
    await versioned.get('k@1');
    plain.caches.invalidate();
    versioned.caches.invalidate();
    await plain.get('k');
    await versioned.get('k@1');
    expect(plain.loads).toEqual(['k', 'k']);
    expect(versioned.loads).toEqual(['k@1']);
  });

  it("belongs to one service's caches: another's change and statistics leave it alone", async () => {
    const ours = textCache(100 * KIB);
    const theirs = textCache(100 * KIB);
    await ours.get('k');
    await theirs.get('k');
    theirs.caches.invalidate();
    await ours.get('k');
    expect(ours.loads).toEqual(['k']);
    expect(ours.caches.statistics().get('test')).toEqual({ hits: 1, misses: 1 });
    expect(theirs.caches.statistics().get('test')).toEqual({ hits: 0, misses: 1 });
  });
});
