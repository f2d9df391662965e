// In-process caches for what hot paths read on every request and is rarely changed (credentials,
// the geo data version, effective prompts). A change made through this process clears every cache
// at once (`invalidateCaches`), so it is seen on the next request. A change made by another
// process reaches this one as a NOTIFY on CACHE_INVALIDATION_CHANNEL, sent by triggers on the
// tables concerned (migrations/0002_cache_invalidation.sql), within milliseconds; and an entry
// lives at most `ttlMs` in any case, should a notification be lost.

/** The channel the invalidation triggers notify; every process listens on it (src/server.ts). */
export const CACHE_INVALIDATION_CHANNEL = 'partner_integrations_changed';

let generation = 0;

/** Call after a write that cached reads depend on, and on every invalidation notification. */
export function invalidateCaches(): void {
  generation++;
}

interface Entry<V> {
  value: Promise<V>;
  expiresAt: number;
  generation: number;
}

interface CacheCounts {
  hits: number;
  misses: number;
}

/** Look-ups of every cache of the process by name, for the metrics: plain counters, no labels to build per request. */
const statistics = new Map<string, CacheCounts>();

export function cacheStatistics(): ReadonlyMap<string, Readonly<CacheCounts>> {
  return statistics;
}

export class ShortLivedCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private readonly counts: CacheCounts;

  constructor(
    name: string,
    private readonly ttlMs: number,
    private readonly maxEntries: number,
  ) {
    let counts = statistics.get(name);
    if (!counts) {
      counts = { hits: 0, misses: 0 };
      statistics.set(name, counts);
    }
    this.counts = counts;
  }

  /** The cached value of `key`, or what `load` gives (one load at a time per key). */
  get(key: string, load: () => Promise<V>): Promise<V> {
    const now = Date.now();
    const cached = this.entries.get(key);
    if (cached && cached.expiresAt > now && cached.generation === generation) {
      this.counts.hits++;
      return cached.value;
    }
    this.counts.misses++;
    const entry: Entry<V> = { value: load(), expiresAt: now + this.ttlMs, generation };
    this.entries.delete(key);
    this.entries.set(key, entry);
    // A failed load is not remembered.
    entry.value.catch(() => this.entries.get(key) === entry && this.entries.delete(key));
    // Oldest first: the bound keeps a flood of unknown keys from growing the map.
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    return entry.value;
  }
}

/** One value per database handle, so that two services in one process (tests) never share it. */
export function perDatabase<V>(make: () => V): (db: object) => V {
  const values = new WeakMap<object, V>();
  return (db) => {
    let value = values.get(db);
    if (value === undefined) {
      value = make();
      values.set(db, value);
    }
    return value;
  };
}
