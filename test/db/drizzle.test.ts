// Drizzle on the handle's sender (src/db/drizzle.ts): the builder's statements go the way named
// statements go, prepared on their connection, and its transactions open as asked, nest as
// savepoints and roll back whole.
import { eq, sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { Transaction } from '../../src/db/drizzle.js';
import { tenants } from '../../src/db/schema.js';
import { useTestContext } from '../support/apps.js';

const test = useTestContext();

const uniqueSlug = (what: string) => `drizzle-${what}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;

describe('Drizzle on the handle', () => {
  it("keeps the builder's statements prepared on their connection", async () => {
    const prepared = await test.context.db.transaction(async (tx) => {
      const query = tx
        .select({ id: tenants.id })
        .from(tenants)
        .where(eq(tenants.slug, uniqueSlug('prepared')));
      await query;
      const statements = await tx.execute<{ statement: string }>(sql`select statement from pg_prepared_statements`);
      return statements.map((row) => row.statement).includes(query.toSQL().sql);
    });
    expect(prepared).toBe(true);
  });

  it('opens a transaction with the isolation and access it is asked for', async () => {
    const modes = await test.context.db.transaction(
      async (tx) => {
        const [isolation] = await tx.execute<{ transaction_isolation: string }>(sql`show transaction_isolation`);
        const [readOnly] = await tx.execute<{ transaction_read_only: string }>(sql`show transaction_read_only`);
        return [isolation?.transaction_isolation, readOnly?.transaction_read_only];
      },
      { isolationLevel: 'serializable', accessMode: 'read only' },
    );
    expect(modes).toEqual(['serializable', 'on']);
  });

  it('rolls a nested transaction back to its savepoint, and the whole one back on failure', async () => {
    const { db } = test.context;
    const [kept, undone, lost] = [uniqueSlug('kept'), uniqueSlug('undone'), uniqueSlug('lost')];
    const failure = new Error('rolled back on purpose');
    // Adds a tenant in a transaction of `on` that then fails: what it ends with.
    const addThenFail = (on: Pick<Transaction, 'transaction'>, slug: string) =>
      on
        .transaction(async (inner) => {
          await inner.insert(tenants).values({ slug, name: 'Drizzle', gateway: 'tap' });
          throw failure;
        })
        .catch((error) => error);
    await db.transaction(async (tx) => {
      await tx.insert(tenants).values({ slug: kept, name: 'Drizzle', gateway: 'tap' });
      expect(await addThenFail(tx, undone)).toBe(failure);
    });
    const whole = await addThenFail(db, lost);
    expect(whole).toBe(failure);
    const found = await db
      .select({ slug: tenants.slug })
      .from(tenants)
      .where(sql`${tenants.slug} in (${kept}, ${undone}, ${lost})`);
    expect(found).toEqual([{ slug: kept }]);
  });
});
