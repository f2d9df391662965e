// A DATA_DIR written by PGlite, as the releases before the embedded server made it (PGlite, the
// project's migrations, pg-boss's queue table, rows), moves to the embedded server on first open,
// once, with as many rows in every table; PGlite's files stay beside it.
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/client.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { PGLITE_DIR_NAME } from '../../src/db/pglite-move.js';
import { migrationsDir } from '../../src/paths.js';
import { TEST_DATABASE_URL } from '../support/database.js';
import { loggerInto } from '../support/logs.js';

const dataDir = mkdtempSync(path.join(tmpdir(), 'pi-pglite-move-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** The last migration of the PGlite releases (0.1.0 is the last of them): later ones never ran on PGlite. */
const LAST_PGLITE_MIGRATION = '0008_payment_notification_sets';

/** The migrations folder as the PGlite releases had it. */
function pgliteMigrations(): string {
  const folder = mkdtempSync(path.join(tmpdir(), 'pi-pglite-migrations-'));
  cpSync(migrationsDir, folder, { recursive: true });
  const journalPath = path.join(folder, 'meta', '_journal.json');
  const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as { entries: { tag: string }[] };
  const last = journal.entries.findIndex((entry) => entry.tag === LAST_PGLITE_MIGRATION);
  expect(last).toBeGreaterThan(0);
  writeFileSync(journalPath, JSON.stringify({ ...journal, entries: journal.entries.slice(0, last + 1) }));
  return folder;
}

/** A DATA_DIR as the PGlite releases left it. */
async function writeWithPglite(): Promise<void> {
  const pglite = await PGlite.create(dataDir);
  const migrationsFolder = pgliteMigrations();
  await migrate(drizzle(pglite), { migrationsFolder });
  rmSync(migrationsFolder, { recursive: true, force: true });
  // The columns of pg-boss's job table the move reads.
  await pglite.exec(`
    create schema pgboss;
    create type pgboss.job_state as enum ('created', 'retry', 'active', 'completed', 'cancelled', 'failed');
    create table pgboss.job (
      id uuid primary key default gen_random_uuid(), name text not null, data jsonb,
      state pgboss.job_state not null default 'created',
      start_after timestamptz not null default now(), created_on timestamptz not null default now());
    insert into tenants (slug, name, gateway) values ('one', 'One', 'tap'), ('two', 'Two', 'tap');
    insert into invoices (id, tenant_id, amount, currency)
      select '00000000-0000-4000-8000-000000000001', id, 10, 'SAR' from tenants where slug = 'one';
    insert into pgboss.job (name, data, state, start_after) values
      ('payment-request', '{"invoice_id": "00000000-0000-4000-8000-000000000001", "attempt": 1}', 'completed', now()),
      ('payment-request', '{"invoice_id": "00000000-0000-4000-8000-000000000001", "attempt": 2}', 'retry',
       '2030-01-01T00:00:00Z');`);
  await pglite.close();
}

describe.skipIf(TEST_DATABASE_URL)('a PGlite DATA_DIR', () => {
  it('moves to the embedded server once, every table with as many rows, its files kept', async () => {
    await writeWithPglite();
    const lines: string[] = [];
    const logger = loggerInto(lines, 'info');
    let database = await openDatabase({ databaseUrl: null, dataDir, logger });
    try {
      expect(database.movePgliteData).toBeDefined();
      await migrateDatabase(database);
      const count = async (table: string) =>
        (await database.db.execute<{ n: number }>(sql.raw(`select count(*)::int as n from ${table}`)))[0].n;
      expect(await count('tenants')).toBe(2);
      const [request] = await database.db.execute<{ attempt: number; due_then: boolean; state: string }>(
        sql.raw(`select attempt, due_at = '2030-01-01T00:00:00Z' as due_then, state from payment_requests`),
      );
      expect(request).toEqual({ attempt: 2, due_then: true, state: 'waiting' });
    } finally {
      await database.close();
    }
    const moved = lines.map((line) => JSON.parse(line)).find((line) => line.counts);
    expect(moved.msg).toMatch(/^PGlite data moved to the embedded PostgreSQL server, row counts equal in every table/);
    expect(moved.counts['public.tenants']).toEqual({ pglite: 2, postgresql: 2 });
    expect(moved.counts['pgboss.job → payment_requests']).toEqual({ pglite: 1, postgresql: 1 });
    const pgliteDir = path.join(dataDir, PGLITE_DIR_NAME);
    expect(existsSync(path.join(pgliteDir, 'PG_VERSION'))).toBe(true);
    expect(existsSync(path.join(dataDir, 'PG_VERSION'))).toBe(false);
    expect(JSON.parse(readFileSync(path.join(pgliteDir, 'MOVED-TO-POSTGRESQL'), 'utf8')).counts).toEqual(moved.counts);

    database = await openDatabase({ databaseUrl: null, dataDir, logger });
    try {
      expect(database.movePgliteData).toBeUndefined();
    } finally {
      await database.close();
    }
  }, 120_000);
});
