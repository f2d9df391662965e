// Named statements (src/db/statements.ts) run beside the Drizzle builder through `runIn`
// (src/db/client.ts): on the database, or inside a Drizzle transaction, whose work they join.
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { runIn } from '../../src/db/client.js';
import { tenants } from '../../src/db/schema.js';
import { statement } from '../../src/db/statements.js';
import { useTestContext } from '../support/apps.js';

const test = useTestContext();

const TENANTS_WITH_SLUG = statement<[slug: string], { count: number }>(
  'select count(*)::int as count from tenants where slug = $1',
);

describe('named statements beside the builder', () => {
  it('give each $n its value, however often and in whatever order the text names it', async () => {
    const rows = await runIn(test.context.db)(
      statement<[word: string, number: number], { number: number; word: string; again: string }>(
        'select $2::int as number, $1::text as word, $1::text || $2::text as again',
      ),
      ['ten', 10],
    );
    expect(rows).toEqual([{ number: 10, word: 'ten', again: 'ten10' }]);
  });

  it('run in a Drizzle transaction: they see its writes, and go with its rollback', async () => {
    const { db } = test.context;
    const slug = `statements-${Date.now()}`;
    const rolledBack = new Error('rolled back on purpose');
    const seen = await db
      .transaction(async (tx) => {
        await tx.insert(tenants).values({ slug, name: 'Statements', gateway: 'tap' });
        const [inside] = await runIn(tx)(TENANTS_WITH_SLUG, [slug]);
        const [outside] = await runIn(db)(TENANTS_WITH_SLUG, [slug]);
        expect({ inside: inside.count, outside: outside.count }).toEqual({ inside: 1, outside: 0 });
        throw rolledBack;
      })
      .catch((error) => error);
    expect(seen).toBe(rolledBack);
    expect(await db.select().from(tenants).where(eq(tenants.slug, slug))).toEqual([]);
  });
});
