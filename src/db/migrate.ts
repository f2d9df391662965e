import { migrationsDir } from '../paths.js';
import type { DatabaseHandle } from './client.js';

/** Advisory lock key serialising schema changes and first-start seeding across instances. */
const SCHEMA_LOCK_KEY = 715_100_001;

/**
 * Applies pending migrations, then `afterMigrate` (first-start seeding, the queue's tables), under
 * one advisory lock, Drizzle's migrator taking none while several instances may start at once, and
 * without the request deadline: a migration may rightly take minutes. The migrations run on a
 * connection that keeps its session, past any transaction pooler.
 */
export async function migrateDatabase(
  handle: DatabaseHandle,
  afterMigrate: () => Promise<void> = async () => {},
): Promise<void> {
  await handle.withAdvisoryLock(SCHEMA_LOCK_KEY, () =>
    handle.withoutDeadline(async () => {
      await handle.migrate(migrationsDir);
      await handle.movePgliteData?.();
      await afterMigrate();
    }),
  );
}
