// The geo data version: one counter, raised in the same transaction as every change to countries,
// cities or attractions (admin API, `partnerctl data import`). Listings key their cached counts and
// their ETags on it, so a cached value can never outlive the data it was computed from. The
// version itself is cached for a second: a change is seen at once by the process that made it, by
// every other when the invalidation notice arrives, and within a second at worst.
import { eq, sql } from 'drizzle-orm';
import type { CacheOptions, Caches } from '../cache.js';
import type { Executor } from '../db/client.js';
import { geoDataVersion } from '../db/schema.js';

const ROW_ID = 1;

/** Raises the version; call inside the transaction that changes geo data. */
export async function bumpGeoDataVersion(tx: Executor, caches: Caches): Promise<void> {
  await tx
    .insert(geoDataVersion)
    .values({ id: ROW_ID, version: 1 })
    .onConflictDoUpdate({
      target: geoDataVersion.id,
      set: { version: sql`${geoDataVersion.version} + 1`, updatedAt: sql`now()` },
    });
  caches.invalidate();
}

/** Read on every listing request: another process's change is seen within this time. */
const VERSION_TTL_MS = 1000;
const VERSIONS: CacheOptions<number> = {
  name: 'geo_data_version',
  ttlMs: VERSION_TTL_MS,
  maxBytes: 1024,
  sizeOf: () => 8,
};

/** The current version (0 before any geo data was written): at once when cached, else one primary-key lookup. */
export function readGeoDataVersion(db: Executor, caches: Caches): number | Promise<number> {
  return caches.cache(VERSIONS).get('version', async () => {
    const [row] = await db
      .select({ version: geoDataVersion.version })
      .from(geoDataVersion)
      .where(eq(geoDataVersion.id, ROW_ID));
    return row?.version ?? 0;
  });
}
