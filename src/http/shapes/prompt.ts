// A suggested prompt in the API shape (spec 2.2): served by the integrations host, embedded by the admin host.
import { Type } from '@sinclair/typebox';
import { LANGUAGES } from '../../prompts/prompts.js';
import { Timestamp, Uuid } from '../schemas.js';

export const Language = Type.Unsafe<(typeof LANGUAGES)[number]>({
  type: 'string',
  enum: [...LANGUAGES],
  description: 'Prompt language',
});

export const PromptObject = Type.Object({
  id: Uuid,
  language: Language,
  text: Type.String(),
  name: Type.String({ description: 'The same value as `text`' }),
  sort_order: Type.Integer({ description: 'Lower numbers appear first' }),
  is_active: Type.Boolean(),
  source: Type.Unsafe<'tenant' | 'default'>({
    type: 'string',
    enum: ['tenant', 'default'],
    description: "`tenant` for a tenant's own prompt, `default` for one of the default set",
  }),
  created_at: Timestamp,
  updated_at: Timestamp,
});
