// Suggested prompts (spec 2.2, 3.2, 4.4; DECISIONS §3, §11): each tenant's own prompts per language
// and mode, and the effective set the widget shows: the tenant's active prompts for a language in
// the credential's mode, or else that language's default set, never another language's or the
// other mode's prompts (spec §1 rule 3).
import { and, asc, eq, getTableColumns, notExists, type SQL, sql } from 'drizzle-orm';
import type { Caches } from '../cache.js';
import { type Executor, runIn } from '../db/client.js';
import { defaultPrompts, suggestedPrompts } from '../db/schema.js';
import { statement } from '../db/statements.js';
import { type FieldError, invalid, notFound } from '../errors.js';
import type { Language } from '../languages.js';
import type { Mode } from '../tenants/index.js';
import { displayTextProblem } from '../text.js';

export const TEXT_MAX_CHARACTERS = 500;
/** Bounds of `sort_order`: room for any ordering scheme, well inside a PostgreSQL integer. */
export const SORT_ORDER_MIN = -1_000_000;
export const SORT_ORDER_MAX = 1_000_000;

export type PromptSource = 'tenant' | 'default';

/** A tenant's prompt or one of a language's defaults (always active), told apart by `source`. */
export interface Prompt {
  id: string;
  language: Language;
  text: string;
  sortOrder: number;
  isActive: boolean;
  source: PromptSource;
  createdAt: Date;
  updatedAt: Date;
}

interface PromptInput {
  language: Language;
  text: string;
  sort_order?: number;
  is_active?: boolean;
}

type PromptChanges = Partial<PromptInput>;

/** Whose prompts: a tenant's, in the mode of the credential (a test secret has a set of its own). */
export interface PromptOwner {
  tenantId: string;
  mode: Mode;
}

interface EffectivePrompts {
  language: Language;
  source: PromptSource;
  prompts: Prompt[];
}

type PromptRow = typeof suggestedPrompts.$inferSelect;
type DefaultPromptRow = typeof defaultPrompts.$inferSelect;

function toPrompt(row: PromptRow | DefaultPromptRow): Prompt {
  const isDefault = !('tenantId' in row);
  return {
    id: row.id,
    language: row.language as Language,
    text: row.text,
    sortOrder: row.sortOrder,
    isActive: isDefault ? true : row.isActive,
    source: isDefault ? 'default' : 'tenant',
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

/**
 * What is wrong with a prompt text once trimmed, or null: 1 to 500 characters (code points), and
 * display text a traveller can read as it is (see src/text.ts).
 */
function textProblem(trimmed: string): string | null {
  const length = [...trimmed].length;
  if (length < 1 || length > TEXT_MAX_CHARACTERS)
    return `must be 1 to ${TEXT_MAX_CHARACTERS} characters after trimming`;
  return displayTextProblem(trimmed);
}

/** The text as stored (trimmed), or the validation error naming `field`. */
function promptText(text: string, field = 'text'): string {
  const trimmed = text.trim();
  const problem = textProblem(trimmed);
  if (problem) throw invalid([{ field, message: problem, location: 'body' }]);
  return trimmed;
}

const ownedBy = (owner: PromptOwner) =>
  and(eq(suggestedPrompts.tenantId, owner.tenantId), eq(suggestedPrompts.mode, owner.mode));

const ownPrompt = (owner: PromptOwner, id: string) => and(ownedBy(owner), eq(suggestedPrompts.id, id));

const tenantOrder = [asc(suggestedPrompts.sortOrder), asc(suggestedPrompts.createdAt), asc(suggestedPrompts.id)];
const defaultOrder = [asc(defaultPrompts.sortOrder), asc(defaultPrompts.createdAt), asc(defaultPrompts.id)];

export async function listPrompts(db: Executor, owner: PromptOwner, language?: Language): Promise<Prompt[]> {
  const rows = await db
    .select()
    .from(suggestedPrompts)
    .where(and(ownedBy(owner), language && eq(suggestedPrompts.language, language)))
    .orderBy(asc(suggestedPrompts.language), ...tenantOrder);
  return rows.map(toPrompt);
}

export async function createPrompt(
  db: Executor,
  caches: Caches,
  owner: PromptOwner,
  input: PromptInput,
): Promise<Prompt> {
  const [row] = await db
    .insert(suggestedPrompts)
    .values({
      tenantId: owner.tenantId,
      mode: owner.mode,
      language: input.language,
      text: promptText(input.text),
      sortOrder: input.sort_order ?? 0,
      isActive: input.is_active ?? true,
    })
    .returning();
  caches.invalidate();
  return toPrompt(row);
}

/** A partial update; at least one field must be given. */
export async function updatePrompt(
  db: Executor,
  caches: Caches,
  owner: PromptOwner,
  id: string,
  changes: PromptChanges,
): Promise<Prompt> {
  if (Object.values(changes).every((value) => value === undefined)) {
    throw invalid([
      { field: '(root)', message: 'must have at least one of language, text, sort_order, is_active', location: 'body' },
    ]);
  }
  const [row] = await db
    .update(suggestedPrompts)
    .set({
      language: changes.language,
      text: changes.text === undefined ? undefined : promptText(changes.text),
      sortOrder: changes.sort_order,
      isActive: changes.is_active,
      updatedAt: sql`now()`,
    })
    .where(ownPrompt(owner, id))
    .returning();
  if (!row) throw notFound('Suggested prompt');
  caches.invalidate();
  return toPrompt(row);
}

export async function deletePrompt(
  db: Executor,
  caches: Caches,
  owner: PromptOwner,
  id: string,
): Promise<{ id: string }> {
  const [row] = await db.delete(suggestedPrompts).where(ownPrompt(owner, id)).returning({ id: suggestedPrompts.id });
  if (!row) throw notFound('Suggested prompt');
  caches.invalidate();
  return row;
}

export async function listDefaultPrompts(db: Executor, language: Language): Promise<Prompt[]> {
  const rows = await db
    .select()
    .from(defaultPrompts)
    .where(eq(defaultPrompts.language, language))
    .orderBy(...defaultOrder);
  return rows.map(toPrompt);
}

/**
 * What the widget shows for `language`: the tenant's active prompts of the owner's mode if any, else
 * the defaults. One query: the defaults are read only when the tenant has no active prompt in that
 * mode. A hot path, which the integrations host answers from cached bytes, per tenant and mode,
 * until any prompt changes (src/http/response-cache.ts).
 */
export async function effectivePrompts(
  db: Executor,
  owner: PromptOwner,
  language: Language,
): Promise<EffectivePrompts> {
  const active: SQL | undefined = and(
    ownedBy(owner),
    eq(suggestedPrompts.language, language),
    eq(suggestedPrompts.isActive, true),
  );
  const own = db
    .select({ ...getTableColumns(suggestedPrompts), isDefault: sql<boolean>`false`.as('is_default') })
    .from(suggestedPrompts)
    .where(active);
  const defaults = db
    .select({
      id: defaultPrompts.id,
      tenantId: sql<string>`null::uuid`.as('tenant_id'),
      language: defaultPrompts.language,
      text: defaultPrompts.text,
      sortOrder: defaultPrompts.sortOrder,
      isActive: sql<boolean>`true`.as('is_active'),
      mode: sql<Mode>`null::text`.as('mode'),
      createdAt: defaultPrompts.createdAt,
      updatedAt: defaultPrompts.updatedAt,
      isDefault: sql<boolean>`true`.as('is_default'),
    })
    .from(defaultPrompts)
    .where(
      and(
        eq(defaultPrompts.language, language),
        notExists(db.select({ id: suggestedPrompts.id }).from(suggestedPrompts).where(active)),
      ),
    );
  const rows = await own.unionAll(defaults).orderBy(sql`sort_order`, sql`created_at`, sql`id`);
  const source: PromptSource = rows.length > 0 && !rows[0].isDefault ? 'tenant' : 'default';
  return {
    language,
    source,
    prompts: rows.map(({ isDefault, tenantId, ...row }) => toPrompt(isDefault ? row : { ...row, tenantId })),
  };
}

/**
 * One replacement of a language's defaults at a time, until its transaction ends: two at once would
 * each delete only what the other had not committed yet, and store both sets. The key is 715_100_040
 * with the language's hash.
 */
const LOCK_LANGUAGE_DEFAULTS = statement<[language: Language], never>(
  'select pg_advisory_xact_lock(715100040, hashtext($1))',
);

interface DefaultPromptInput {
  text: string;
  sort_order?: number;
}

/** Replaces a language's default set at once; a prompt without `sort_order` keeps its position. */
export async function replaceDefaultPrompts(
  db: Executor,
  caches: Caches,
  language: Language,
  prompts: DefaultPromptInput[],
): Promise<Prompt[]> {
  const values = prompts.map((prompt, index) => ({
    language,
    text: prompt.text.trim(),
    sortOrder: prompt.sort_order ?? index,
  }));
  const problems: FieldError[] = values.flatMap((value, index) => {
    const problem = textProblem(value.text);
    return problem ? [{ field: `prompts.${index}.text`, message: problem, location: 'body' as const }] : [];
  });
  if (problems.length) throw invalid(problems);
  const replaced = await db.transaction(async (tx) => {
    await runIn(tx)(LOCK_LANGUAGE_DEFAULTS, [language]);
    await tx.delete(defaultPrompts).where(eq(defaultPrompts.language, language));
    if (values.length) await tx.insert(defaultPrompts).values(values);
    return listDefaultPrompts(tx, language);
  });
  caches.invalidate();
  return replaced;
}
