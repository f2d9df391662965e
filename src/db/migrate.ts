import type { Logger } from '../logger.js';
import { migrationsDir } from '../paths.js';
import type { DatabaseHandle } from './client.js';
import { isConflict, sqlState } from './errors.js';

/** Advisory lock key serialising schema changes and first-start seeding across instances. */
const SCHEMA_LOCK_KEY = 715_100_001;

/**
 * The longest a migration waits for a table's lock. While it waits, every statement on that table
 * waits behind it: running instances' requests (a rolling upgrade) would be held for as long as
 * the transactions ahead of it last, or deadlock with it. Below PostgreSQL's deadlock_timeout, so
 * that the migration gives way first.
 */
const MIGRATION_LOCK_TIMEOUT_MS = 500;
/** How long migrations keep trying for their locks before the start fails. */
const MIGRATION_LOCKS_WAIT_MS = 10 * 60_000;
/** PostgreSQL's lock_not_available: a lock not granted within lock_timeout. */
const LOCK_NOT_AVAILABLE = '55P03';

/**
 * Applies pending migrations, then `afterMigrate` (first-start seeding, the queue's tables), under
 * one advisory lock, Drizzle's migrator taking none while several instances may start at once, and
 * without the request deadline: a migration may rightly take minutes. The migrations run on a
 * connection that keeps its session, past any transaction pooler. They are applied all or none: a
 * lock they could not get soon, or a deadlock, rolls them all back, and they are tried again a
 * moment later, for up to MIGRATION_LOCKS_WAIT_MS (docs/deploy.md, "Rolling upgrade").
 */
export async function migrateDatabase(
  handle: DatabaseHandle,
  afterMigrate: () => Promise<void> = async () => {},
  log?: Logger,
): Promise<void> {
  await handle.withAdvisoryLock(SCHEMA_LOCK_KEY, () =>
    handle.withoutDeadline(async () => {
      await applyMigrations(handle, log);
      await handle.movePgliteData?.();
      await afterMigrate();
    }),
  );
}

async function applyMigrations(handle: DatabaseHandle, log: Logger | undefined): Promise<void> {
  const giveUpAt = Date.now() + MIGRATION_LOCKS_WAIT_MS;
  for (let attempt = 1; ; attempt++) {
    try {
      return await handle.migrate(migrationsDir, MIGRATION_LOCK_TIMEOUT_MS);
    } catch (error) {
      const gaveWay = sqlState(error) === LOCK_NOT_AVAILABLE || isConflict(error);
      if (!gaveWay || Date.now() >= giveUpAt) throw error;
      log?.warn(
        { attempt, err: error },
        'migrations gave way to running transactions (a table lock not free soon, or a deadlock): trying again',
      );
      // Long enough for the statements that queued behind the migrations to run.
      await new Promise((resolve) => setTimeout(resolve, 1000 + Math.random() * 1000));
    }
  }
}
