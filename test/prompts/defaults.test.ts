// The default prompt sets: seeded once per language, left alone once an operator sets them.
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { defaultPrompts } from '../../src/db/schema.js';
import { createLogger } from '../../src/logger.js';
import { SEED_DEFAULT_PROMPTS, seedDefaultPrompts } from '../../src/prompts/defaults.js';
import { listDefaultPrompts, replaceDefaultPrompts } from '../../src/prompts/prompts.js';
import { useTestContext } from '../support/apps.js';

describe('default prompt sets', () => {
  const service = useTestContext();

  it('are seeded with six prompts per language, in order', async () => {
    for (const language of ['en', 'ar'] as const) {
      const prompts = await listDefaultPrompts(service.context.db, language);
      expect(prompts.map((prompt) => prompt.text)).toEqual(SEED_DEFAULT_PROMPTS[language]);
      expect(new Set(prompts.map((prompt) => prompt.text)).size).toBe(6);
    }
  });

  it("are seeded again only for a language that has none, never over an operator's set", async () => {
    const { db } = service.context;
    const logger = createLogger('silent');
    const before = await listDefaultPrompts(db, 'ar');
    await seedDefaultPrompts(service.context, logger);
    expect(await listDefaultPrompts(db, 'ar')).toEqual(before);

    await replaceDefaultPrompts(db, service.context.caches, 'en', [{ text: 'Only one' }]);
    await db.delete(defaultPrompts).where(eq(defaultPrompts.language, 'ar'));
    await seedDefaultPrompts(service.context, logger);
    expect((await listDefaultPrompts(db, 'en')).map((prompt) => prompt.text)).toEqual(['Only one']);
    expect((await listDefaultPrompts(db, 'ar')).map((prompt) => prompt.text)).toEqual(SEED_DEFAULT_PROMPTS.ar);
  });

  it('are replaced in one transaction: a failure keeps the current set', async () => {
    const { db } = service.context;
    const before = await listDefaultPrompts(db, 'en');
    await expect(
      db.transaction(async (tx) => {
        await replaceDefaultPrompts(tx, service.context.caches, 'en', [{ text: 'Never kept' }]);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await listDefaultPrompts(db, 'en')).toEqual(before);
  });
});
