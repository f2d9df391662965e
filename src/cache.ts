// In-process caches for what hot paths read on every request and is rarely changed (credentials,
// the geo data version, listing orders, whole responses). Each is bounded in bytes (an estimate of
// what its entries hold), never only in entries. A change made through this process clears every
// cache at once (`invalidateCaches`), so it is seen on the next request. A change made by another
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

/** Which invalidation the caches are at: taken before reading what `ShortLivedCache.set` will hold. */
export const cacheGeneration = (): number => generation;

/** What an entry costs besides its value: the map slot, the entry object, the promise. */
export const ENTRY_OVERHEAD_BYTES = 200;

/**
 * An estimate of the heap a plain value (rows, views: strings, numbers, dates, arrays) takes:
 * twice its JSON text, generous for one-byte strings and pointers alike. For small, rarely
 * loaded values only: it serialises the value.
 */
export function approximateBytes(value: unknown): number {
  return 2 * (JSON.stringify(value)?.length ?? 4);
}

interface Entry<V> {
  value: Promise<V>;
  expiresAt: number;
  generation: number;
  /** Counted once the value has loaded; 0 until then. */
  bytes: number;
  /** The value, once loaded and kept: what a hit answers. */
  loaded?: { value: V };
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

export interface CacheOptions<V> {
  /** Its name in the metrics; caches of one name share their counters. */
  name: string;
  /** How long an entry may serve; Infinity for values keyed by what makes them current. */
  ttlMs: number;
  /** The bound on what the cache holds: keys, values (by `sizeOf`) and overhead. */
  maxBytes: number;
  /** The bytes a loaded value holds. */
  sizeOf: (value: V) => number;
  /**
   * For values whose key names the version of the data they come from: `invalidateCaches` leaves
   * them, since a change raises the version and so the key asked for.
   */
  keyedByVersion?: boolean;
}

export class ShortLivedCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private readonly counts: CacheCounts;
  private heldBytes = 0;

  constructor(private readonly options: CacheOptions<V>) {
    let counts = statistics.get(options.name);
    if (!counts) {
      counts = { hits: 0, misses: 0 };
      statistics.set(options.name, counts);
    }
    this.counts = counts;
  }

  /** Bytes held by loaded entries (keys and overhead included). */
  get bytes(): number {
    return this.heldBytes;
  }

  /**
   * The cached value of `key`, or what `load` gives (one load at a time per key): the value itself
   * when it is loaded, so that a hit is answered in the same tick.
   */
  get(key: string, load: () => Promise<V>): V | Promise<V> {
    const now = Date.now();
    const cached = this.entries.get(key);
    if (cached && this.isCurrent(cached, now)) {
      this.hit(key, cached);
      return cached.loaded ? cached.loaded.value : cached.value;
    }
    this.counts.misses++;
    if (cached) this.remove(key, cached);
    const entry: Entry<V> = { value: load(), expiresAt: now + this.options.ttlMs, generation, bytes: 0 };
    this.entries.set(key, entry);
    entry.value.then(
      (value) => this.account(key, entry, value),
      // A failed load is not remembered.
      () => this.entries.get(key) === entry && this.remove(key, entry),
    );
    return entry.value;
  }

  private isCurrent(entry: Entry<V>, now: number): boolean {
    return entry.expiresAt > now && (entry.generation === generation || this.options.keyedByVersion === true);
  }

  private hit(key: string, entry: Entry<V>): void {
    this.counts.hits++;
    // Most recently used last: eviction takes the least recently used first.
    this.entries.delete(key);
    this.entries.set(key, entry);
  }

  private account(key: string, entry: Entry<V>, value: V): void {
    if (this.entries.get(key) !== entry) return;
    const bytes = ENTRY_OVERHEAD_BYTES + 2 * key.length + this.options.sizeOf(value);
    // A value larger than the whole bound is served once, never kept.
    if (bytes > this.options.maxBytes) return void this.entries.delete(key);
    entry.bytes = bytes;
    entry.loaded = { value };
    this.heldBytes += bytes;
    for (const [oldestKey, oldest] of this.entries) {
      if (this.heldBytes <= this.options.maxBytes) break;
      this.remove(oldestKey, oldest);
    }
  }

  private remove(key: string, entry: Entry<V>): void {
    this.entries.delete(key);
    this.heldBytes -= entry.bytes;
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
