// In-process caches for what hot paths read on every request and is rarely changed (credentials,
// the geo data version, listing orders, whole responses). Each is bounded in bytes (an estimate of
// what its entries hold), never only in entries. A change made through this process clears every
// cache at once (`Caches.invalidate`), so it is seen on the next request. A change made by another
// process reaches this one as a NOTIFY on CACHE_INVALIDATION_CHANNEL, sent by triggers on the
// tables concerned (migrations/0002_cache_invalidation.sql), within milliseconds; and an entry
// lives at most `ttlMs` in any case, should a notification be lost. All of it lives in one `Caches`
// object, built when the service's context opens (src/server.ts) and handed to what reads or
// changes cached data: two services in one process (tests) never share a cache.

/** The channel the invalidation triggers notify; every process listens on it (src/server.ts). */
export const CACHE_INVALIDATION_CHANNEL = 'partner_integrations_changed';

/**
 * The one staleness of credentials (tenants' secrets, backend partner keys, operator tokens): how
 * long an answer of another process's credential look-up may stand here after that process
 * revoked it, should the invalidation notice be lost. A change made through this process, or
 * whose notice arrives, is seen on the next request.
 */
export const CREDENTIAL_CACHE_MS = 1000;

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

export interface CacheCounts {
  hits: number;
  misses: number;
}

export interface CacheOptions<V> {
  /** Its name in the metrics, and in its service's `Caches`. */
  name: string;
  /** How long an entry may serve; Infinity for values keyed by what makes them current. */
  ttlMs: number;
  /** The bound on what the cache holds: keys, values (by `sizeOf`) and overhead. */
  maxBytes: number;
  /** The bytes a loaded value holds. */
  sizeOf: (value: V) => number;
  /**
   * For values whose key names the version of the data they come from: `Caches.invalidate` leaves
   * them, since a change raises the version and so the key asked for.
   */
  keyedByVersion?: boolean;
}

/** The caches of one service, their generation and their statistics. */
export class Caches {
  private generation = 0;
  private readonly caches = new Map<string, ShortLivedCache<never>>();
  /** Look-ups by cache name, for the metrics: plain counters, no labels to build per request. */
  private readonly counts = new Map<string, CacheCounts>();
  /** When each credential's use was last recorded (src/tenants/credential-use.ts). */
  readonly credentialUses = new Map<string, number>();

  /** Call after a write that cached reads depend on, and on every invalidation notification. */
  readonly invalidate = (): void => {
    this.generation++;
  };

  /** Which invalidation the caches are at. */
  get current(): number {
    return this.generation;
  }

  /** The cache of `options.name`, made on first use with these options. */
  cache<V>(options: CacheOptions<V>): ShortLivedCache<V> {
    let cache = this.caches.get(options.name) as ShortLivedCache<V> | undefined;
    if (!cache) {
      cache = new ShortLivedCache(this, options);
      this.caches.set(options.name, cache as unknown as ShortLivedCache<never>);
    }
    return cache;
  }

  /** The look-up counters of `name`. */
  countsOf(name: string): CacheCounts {
    let counts = this.counts.get(name);
    if (!counts) {
      counts = { hits: 0, misses: 0 };
      this.counts.set(name, counts);
    }
    return counts;
  }

  statistics(): ReadonlyMap<string, Readonly<CacheCounts>> {
    return this.counts;
  }
}

export class ShortLivedCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private readonly counts: CacheCounts;
  private heldBytes = 0;

  constructor(
    private readonly caches: Caches,
    private readonly options: CacheOptions<V>,
  ) {
    this.counts = caches.countsOf(options.name);
  }

  /** Bytes held by loaded entries (keys and overhead included). */
  get bytes(): number {
    return this.heldBytes;
  }

  /**
   * The cached value of `key`, or what `load` gives (one load at a time per key): the value itself
   * when it is loaded, so that a hit is answered in the same tick. A load under way is answered as
   * the entry's promise, whose rejection is handled here: a caller may let it go unawaited.
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
    const entry: Entry<V> = {
      value: load(),
      expiresAt: now + this.options.ttlMs,
      generation: this.caches.current,
      bytes: 0,
    };
    this.entries.set(key, entry);
    entry.value.then(
      (value) => this.account(key, entry, value),
      // A failed load is not remembered.
      () => this.entries.get(key) === entry && this.remove(key, entry),
    );
    return entry.value;
  }

  /** The loaded value of `key` when it is current; nothing is loaded. */
  peek(key: string): V | undefined {
    const cached = this.entries.get(key);
    if (!cached?.loaded || !this.isCurrent(cached, Date.now())) return undefined;
    this.hit(key, cached);
    return cached.loaded.value;
  }

  private isCurrent(entry: Entry<V>, now: number): boolean {
    return entry.expiresAt > now && (entry.generation === this.caches.current || this.options.keyedByVersion === true);
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
