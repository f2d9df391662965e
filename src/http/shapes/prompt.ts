// A suggested prompt in the API shape (spec 2.2): served by the integrations host, embedded by the admin host.
import { type Static, Type } from '@sinclair/typebox';
import { LANGUAGES, type Language as LanguageCode } from '../../languages.js';
import type { Prompt } from '../../prompts/index.js';
import { Timestamp, Uuid } from '../schemas.js';

export const Language = Type.Unsafe<LanguageCode>({
  type: 'string',
  enum: [...LANGUAGES],
  description: 'Prompt language',
});

export const PromptSource = Type.Unsafe<Prompt['source']>({
  type: 'string',
  enum: ['tenant', 'default'],
  description: "`tenant` for a tenant's own prompt, `default` for one of the default set",
});

const EXAMPLE_PROMPT = 'Best souqs in Riyadh?';

export const PromptObject = Type.Object({
  id: Uuid,
  language: Language,
  text: Type.String({ examples: [EXAMPLE_PROMPT] }),
  name: Type.String({ description: 'The same value as `text`', examples: [EXAMPLE_PROMPT] }),
  sort_order: Type.Integer({ description: 'Lower numbers appear first', examples: [10] }),
  is_active: Type.Boolean(),
  source: PromptSource,
  created_at: Timestamp,
  updated_at: Timestamp,
});

export function promptView(prompt: Prompt): Static<typeof PromptObject> {
  return {
    id: prompt.id,
    language: prompt.language,
    text: prompt.text,
    name: prompt.text,
    sort_order: prompt.sortOrder,
    is_active: prompt.isActive,
    source: prompt.source,
    created_at: prompt.createdAt.toISOString(),
    updated_at: prompt.updatedAt.toISOString(),
  };
}
