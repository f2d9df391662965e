// Migrations beside running instances (docs/deploy.md, "Rolling upgrade"): a migration that cannot
// have a table's lock soon gives way, so that the statements of the running instances do not wait
// behind it, and is applied once the lock is free.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/client.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { migrationsDir } from '../../src/paths.js';
import { connectTo, createEmptyDatabase, type TestDatabase } from '../support/database.js';
import { loggerInto } from '../support/logs.js';
import { waitFor } from '../support/partner-endpoint.js';

/** A migration that alters payment_requests, and every one after it, left pending. */
const FIRST_PENDING = '0026_payment_request_traceparent';

const folders: string[] = [];
const databases: TestDatabase[] = [];
afterAll(async () => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
  for (const database of databases) await database.drop();
});

/** The migrations before `tag`: a schema of an earlier release. */
function migrationsBefore(tag: string): string {
  const folder = mkdtempSync(path.join(tmpdir(), 'pi-migrations-'));
  folders.push(folder);
  cpSync(migrationsDir, folder, { recursive: true });
  const journalPath = path.join(folder, 'meta', '_journal.json');
  const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as { entries: { tag: string }[] };
  const first = journal.entries.findIndex((entry) => entry.tag === tag);
  expect(first).toBeGreaterThan(0);
  writeFileSync(journalPath, JSON.stringify({ ...journal, entries: journal.entries.slice(0, first) }));
  return folder;
}

describe('migrateDatabase', () => {
  it("gives way to a transaction holding a table it alters, holding none of that table's statements behind it, then applies", async () => {
    const created = await createEmptyDatabase();
    databases.push(created);
    const url = created.target.databaseUrl as string;
    const database = await openDatabase({ databaseUrl: url, dataDir: tmpdir() });
    const running = connectTo(url);
    const other = connectTo(url);
    const lines: string[] = [];
    let end = () => {};
    const ended = new Promise<void>((resolve) => (end = resolve));
    let transaction: Promise<unknown> = Promise.resolve();
    let migrated: Promise<void> = Promise.resolve();
    try {
      await database.migrate(migrationsBefore(FIRST_PENDING), 1000);
      // A running instance's transaction that has read payment_requests: the pending migration
      // needs that table's lock, which waits for it to end. The migration starts only once the
      // read has been answered, or it could take the lock first.
      let haveRead = () => {};
      const read = new Promise<void>((resolve) => (haveRead = resolve));
      transaction = running.begin(async (tx) => {
        await tx`select count(*) from payment_requests`;
        haveRead();
        await ended;
      });
      await Promise.race([read, transaction]);
      migrated = migrateDatabase(database, undefined, loggerInto(lines, 'warn'));
      const lockWaits = () =>
        other`select count(*)::int as n from pg_locks
               where relation = 'payment_requests'::regclass and mode = 'AccessExclusiveLock' and not granted`;
      await waitFor('the migration waiting for the lock', async () => (await lockWaits())[0].n > 0, 10_000);
      // Another instance's statement on that table, made while the migration waits: it is answered
      // while the transaction still runs, once the migration has given way.
      const [{ n: requests }] = await other`select count(*)::int as n from payment_requests`;
      expect(requests).toBe(0);
      const gaveWay = await waitFor(
        'the migration giving way',
        () => lines.map((line) => JSON.parse(line)).find((line) => line.msg.startsWith('migrations gave way')),
        10_000,
      );
      expect(gaveWay).toMatchObject({ level: 'warn', attempt: 1 });
      end();
      await transaction;
      await migrated;
      const columns = await other`select column_name from information_schema.columns
                                   where table_name = 'payment_requests' and column_name = 'traceparent'`;
      expect(columns).toHaveLength(1);
    } finally {
      end();
      await Promise.allSettled([transaction, migrated]);
      await Promise.all([running.end({ timeout: 1 }), other.end({ timeout: 1 }), database.close()]);
    }
  });
});
