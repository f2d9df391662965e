// The geo data version: one counter, raised in the same transaction as every change to countries,
// cities or attractions (admin API, `partnerctl data import`). Listings key their cached counts and
// their ETags on it, so a change made by any process is seen by every process on its next request,
// and a cached value can never outlive the data it was computed from.
import { eq, sql } from 'drizzle-orm';
import type { Executor } from '../db/client.js';
import { geoDataVersion } from '../db/schema.js';

const ROW_ID = 1;

/** Raises the version; call inside the transaction that changes geo data. */
export async function bumpGeoDataVersion(tx: Executor): Promise<void> {
  await tx
    .insert(geoDataVersion)
    .values({ id: ROW_ID, version: 1 })
    .onConflictDoUpdate({
      target: geoDataVersion.id,
      set: { version: sql`${geoDataVersion.version} + 1`, updatedAt: sql`now()` },
    });
}

/** The current version (0 before any geo data was written). One primary-key lookup. */
export async function readGeoDataVersion(db: Executor): Promise<number> {
  const [row] = await db.select({ version: geoDataVersion.version }).from(geoDataVersion).where(eq(geoDataVersion.id, ROW_ID));
  return row?.version ?? 0;
}
