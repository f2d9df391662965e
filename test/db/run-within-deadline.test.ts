// A statement run within the deadline (DatabaseHandle.runWithinDeadline): a transaction of its own,
// sent in one round trip, which the server cancels before the request deadline, so that one
// abandoned there never commits after its caller was answered.
import { describe, expect, it } from 'vitest';
import { DatabaseUnavailableError, isUniqueViolation, unavailability } from '../../src/db/errors.js';
import { statement } from '../../src/db/statements.js';
import { useTestContext } from '../support/apps.js';
import { abandonedWorkEnded, connectTo } from '../support/database.js';

const DEADLINE_MS = 600;
const test = useTestContext({ DATABASE_REQUEST_TIMEOUT_MS: String(DEADLINE_MS) });
/** More than the pool's connections (10). */
const FAILURES = 12;

const INSERT_TENANT = statement<[slug: string], { slug: string }>(
  `insert into tenants (slug, name, gateway) values ($1, 'Within the deadline', 'tap') returning slug`,
);
const RENAME_TENANT = statement<[id: string, name: string], { id: string }>(
  'update tenants set name = $2 where id = $1::uuid returning id',
);

describe('a statement run within the deadline', () => {
  it('answers its rows or its error, and hands its connection back either way', async () => {
    const { database } = test.context;
    const slug = `within-${Date.now()}`;
    expect(await database.runWithinDeadline(INSERT_TENANT, [slug])).toEqual([{ slug }]);
    // More failures than the pool has connections: one kept after its failure would leave none.
    for (let attempt = 0; attempt < FAILURES; attempt++) {
      const error = await database.runWithinDeadline(INSERT_TENANT, [slug]).catch((caught: unknown) => caught);
      expect(isUniqueViolation(error)).toBe(true);
    }
    const other = `${slug}-other`;
    expect(await database.runWithinDeadline(INSERT_TENANT, [other])).toEqual([{ slug: other }]);
  });

  it('is cancelled by the server while it waits on a lock: unavailable in time, and nothing committed', async () => {
    const { database } = test.context;
    const { tenant } = await test.createTenant();
    const sql = connectTo(test.database.target.databaseUrl!);
    try {
      const started = performance.now();
      const error = await sql.begin(async (tx) => {
        await tx`select 1 from tenants where id = ${tenant.id} for update`;
        return database.runWithinDeadline(RENAME_TENANT, [tenant.id, 'Renamed']).catch((caught: unknown) => caught);
      });
      expect(unavailability(error)).toBeInstanceOf(DatabaseUnavailableError);
      expect(performance.now() - started).toBeLessThan(DEADLINE_MS * 3);
      // The lock gone, the statement has ended without committing.
      await abandonedWorkEnded(sql, 'update tenants set name%');
      const [{ name }] = await sql<{ name: string }[]>`select name from tenants where id = ${tenant.id}`;
      expect(name).toBe(tenant.name);
    } finally {
      await sql.end({ timeout: 5 });
    }
    expect(await database.runWithinDeadline(RENAME_TENANT, [tenant.id, 'Renamed'])).toEqual([{ id: tenant.id }]);
  });
});
