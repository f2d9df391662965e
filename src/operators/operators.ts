// Named operators: each a person with a role and a token of their own (random 256 bits behind
// `pio_`, kept as a SHA-256 digest, shown once). Resolving a token is cached for a second, like
// credentials (src/cache.ts): a role change or a deletion takes effect on the next request in the
// process that made it, in every other as soon as the invalidation NOTIFY arrives, and within a
// second at worst. A deleted operator is kept (deleted_at) so the audit trail still names them.
import { createHash, randomBytes } from 'node:crypto';
import { and, asc, eq, isNull } from 'drizzle-orm';
import { approximateBytes, type CacheOptions, type Caches, CREDENTIAL_CACHE_MS } from '../cache.js';
import type { Executor } from '../db/client.js';
import { operators } from '../db/schema.js';
import { conflict, invalidField, notFound } from '../errors.js';
import { OPERATOR_ROLES, type OperatorRole } from './roles.js';

export type OperatorRow = typeof operators.$inferSelect;

/** Who is making a request: a named operator, or the bootstrap ADMIN_TOKEN (id null). */
export interface Operator {
  id: string | null;
  name: string;
  role: OperatorRole;
}

/** The audit trail's name for whoever presents ADMIN_TOKEN. */
export const BOOTSTRAP_ADMIN: Operator = { id: null, name: 'admin token', role: 'admin' };

const TOKEN_PREFIX = 'pio_';
const TOKEN_MAX_LENGTH = 128;

const digestToken = (token: string) => createHash('sha256').update(token).digest('hex');
const hintOf = (token: string) => `${TOKEN_PREFIX}…${token.slice(-4)}`;

const RESOLVED_OPERATORS: CacheOptions<Operator | null> = {
  name: 'operators',
  ttlMs: CREDENTIAL_CACHE_MS,
  maxBytes: 1024 * 1024,
  sizeOf: approximateBytes,
};

function checkRole(role: string): OperatorRole {
  if (!(OPERATOR_ROLES as readonly string[]).includes(role)) {
    throw invalidField('role', `must be one of ${OPERATOR_ROLES.join(', ')}`);
  }
  return role as OperatorRole;
}

const nameTaken = (name: string) => conflict(`An operator named "${name}" exists already.`);

/** Unique violation of the live-name index: another live operator has this name. */
const isNameClash = (error: unknown) =>
  (error as { code?: string; cause?: { code?: string } }).code === '23505' ||
  (error as { cause?: { code?: string } }).cause?.code === '23505';

export async function createOperator(
  db: Executor,
  input: { name: string; role: string },
): Promise<{ operator: OperatorRow; token: string }> {
  const role = checkRole(input.role);
  const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
  try {
    const [operator] = await db
      .insert(operators)
      .values({ name: input.name, role, digest: digestToken(token), hint: hintOf(token) })
      .returning();
    return { operator, token };
  } catch (error) {
    if (isNameClash(error)) throw nameTaken(input.name);
    throw error;
  }
}

/** Live operators (not deleted), oldest first. */
export async function listOperators(db: Executor): Promise<OperatorRow[]> {
  return db.select().from(operators).where(isNull(operators.deletedAt)).orderBy(asc(operators.createdAt));
}

export async function getOperator(db: Executor, id: string): Promise<OperatorRow> {
  const [found] = await db
    .select()
    .from(operators)
    .where(and(eq(operators.id, id), isNull(operators.deletedAt)));
  if (!found) throw notFound('Operator');
  return found;
}

export async function updateOperator(
  db: Executor,
  caches: Caches,
  id: string,
  changes: { name?: string; role?: string },
): Promise<OperatorRow> {
  const role = changes.role === undefined ? undefined : checkRole(changes.role);
  try {
    const [updated] = await db
      .update(operators)
      .set({ ...(changes.name !== undefined && { name: changes.name }), ...(role && { role }), updatedAt: new Date() })
      .where(and(eq(operators.id, id), isNull(operators.deletedAt)))
      .returning();
    if (!updated) throw notFound('Operator');
    caches.invalidate();
    return updated;
  } catch (error) {
    if (isNameClash(error)) throw nameTaken(changes.name ?? '');
    throw error;
  }
}

/** Deletes an operator: their token and console sessions stop at once. */
export async function deleteOperator(db: Executor, caches: Caches, id: string): Promise<OperatorRow> {
  const [deleted] = await db
    .update(operators)
    .set({ deletedAt: new Date(), updatedAt: new Date() })
    .where(and(eq(operators.id, id), isNull(operators.deletedAt)))
    .returning();
  if (!deleted) throw notFound('Operator');
  caches.invalidate();
  return deleted;
}

/** The live operator whose token this is, or null. */
export async function resolveOperatorToken(db: Executor, caches: Caches, token: string): Promise<Operator | null> {
  if (!token.startsWith(TOKEN_PREFIX) || token.length > TOKEN_MAX_LENGTH) return null;
  const digest = digestToken(token);
  return caches.cache(RESOLVED_OPERATORS).get(digest, async () => {
    const [found] = await db
      .select()
      .from(operators)
      .where(and(eq(operators.digest, digest), isNull(operators.deletedAt)));
    // Found by digest: timing tells an attacker at most a digest prefix (src/tenants/secrets.ts).
    return found ? operatorOf(found) : null;
  });
}

/** The live operator of this id (a console session's), or null: a deleted one signs nobody in. */
export async function liveOperator(db: Executor, id: string): Promise<Operator | null> {
  const [found] = await db
    .select()
    .from(operators)
    .where(and(eq(operators.id, id), isNull(operators.deletedAt)));
  return found ? operatorOf(found) : null;
}

export const operatorOf = (row: OperatorRow): Operator => ({
  id: row.id,
  name: row.name,
  role: row.role as OperatorRole,
});
