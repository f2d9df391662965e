// The default prompt sets a tenant's widget falls back to, per language, seeded on first start.
// Operators replace them with `PUT /admin/v1/default-prompts/{language}`.

import type { Caches } from '../cache.js';
import type { Executor } from '../db/client.js';
import { defaultPrompts } from '../db/schema.js';
import { LANGUAGES, type Language } from '../languages.js';
import type { Logger } from '../logger.js';
import { replaceDefaultPrompts } from './prompts.js';

export const SEED_DEFAULT_PROMPTS: Record<Language, string[]> = {
  en: [
    'Plan a five-day trip for me',
    'What are the top sights worth visiting in this city?',
    'Suggest family-friendly activities for the weekend',
    'When is the best time of year to visit?',
    'Which local restaurants and dishes do you recommend?',
    'What visa and entry requirements should I know before I travel?',
  ],
  ar: [
    'ضع لي برنامجًا لرحلة مدتها خمسة أيام',
    'ما أبرز المعالم التي تستحق الزيارة في هذه المدينة؟',
    'اقترح أنشطة مناسبة للعائلة في عطلة نهاية الأسبوع',
    'ما أنسب وقت في السنة لزيارة هذه الوجهة؟',
    'ما المطاعم المحلية والأطباق التي تنصحني بتجربتها؟',
    'ما متطلبات التأشيرة والدخول التي ينبغي أن أعرفها قبل السفر؟',
  ],
};

/** Seeds each language that has no default set yet; a language an operator has set is left alone. */
export async function seedDefaultPrompts(
  { db, caches }: { db: Executor; caches: Caches },
  logger: Logger,
): Promise<void> {
  const present = await db.selectDistinct({ language: defaultPrompts.language }).from(defaultPrompts);
  const missing = LANGUAGES.filter((language) => !present.some((row) => row.language === language));
  for (const language of missing) {
    await replaceDefaultPrompts(
      db,
      caches,
      language,
      SEED_DEFAULT_PROMPTS[language].map((text) => ({ text })),
    );
  }
  if (missing.length) logger.info({ languages: missing }, 'default suggested prompts seeded');
}
