// When each credential was last used, for operators (the console shows it). Recorded at most once
// a minute per credential and process, and never waited for: the hot paths that present
// credentials pay one map look-up, not a write.
import { type Caches, ENTRY_OVERHEAD_BYTES } from '../cache.js';
import type { Executor } from '../db/client.js';
import { credentialUsage } from '../db/schema.js';

/** A use within this long of the last recorded one is not recorded again. */
export const CREDENTIAL_USE_RESOLUTION_MS = 60_000;
/** What the times remembered may hold: each is a credential id (a UUID) and a number in a Map. */
const REMEMBERED_BYTES = 4 * 1024 * 1024;
const MAX_REMEMBERED = Math.floor(REMEMBERED_BYTES / (ENTRY_OVERHEAD_BYTES + 2 * 36));

/** Notes that `credentialId` was just used; the write, when one is due, runs in the background. */
export function noteCredentialUse(db: Executor, caches: Caches, credentialId: string, now = Date.now()): void {
  const recorded = caches.credentialUses;
  const last = recorded.get(credentialId);
  if (last !== undefined && now - last < CREDENTIAL_USE_RESOLUTION_MS) return;
  if (recorded.size >= MAX_REMEMBERED) recorded.clear();
  recorded.set(credentialId, now);
  const at = new Date(now);
  db.insert(credentialUsage)
    .values({ credentialId, lastUsedAt: at })
    .onConflictDoUpdate({ target: credentialUsage.credentialId, set: { lastUsedAt: at } })
    // Best effort (the database may be closing): the next use after a failure tries again.
    .catch(() => recorded.get(credentialId) === now && recorded.delete(credentialId));
}
