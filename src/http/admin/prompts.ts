// Admin routes for the default suggested prompt sets, one per language (DECISIONS §8).
import { Type } from '@sinclair/typebox';
import {
  listDefaultPrompts,
  replaceDefaultPrompts,
  SORT_ORDER_MAX,
  SORT_ORDER_MIN,
  TEXT_MAX_CHARACTERS,
} from '../../prompts/index.js';
import { route } from '../route.js';
import { Language, PromptObject, promptView } from '../shapes/prompt.js';

const LanguageParams = Type.Object({ language: Language });
const DefaultPrompts = Type.Object({ prompts: Type.Array(PromptObject) });
/** The body replacing a language's set, also what the console's form is validated against. */
export const DefaultPromptsBody = Type.Object(
  {
    prompts: Type.Array(
      Type.Object(
        {
          text: Type.String({ description: `Trimmed; 1 to ${TEXT_MAX_CHARACTERS} characters after trimming` }),
          sort_order: Type.Optional(Type.Integer({ minimum: SORT_ORDER_MIN, maximum: SORT_ORDER_MAX })),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 50 },
    ),
  },
  { additionalProperties: false },
);

const tags = ['default prompts'];

export const adminPromptRoutes = [
  route({
    method: 'GET',
    url: '/default-prompts/:language',
    schema: {
      operationId: 'getDefaultPrompts',
      tags,
      summary: "A language's default prompt set",
      params: LanguageParams,
      response: { 200: DefaultPrompts },
    },
    handler: (context) => async (request) => ({
      prompts: (await listDefaultPrompts(context.db, request.params.language)).map(promptView),
    }),
  }),

  route({
    method: 'PUT',
    url: '/default-prompts/:language',
    schema: {
      operationId: 'replaceDefaultPrompts',
      tags,
      summary: "Replace a language's default prompt set, at once",
      description: 'A prompt without sort_order takes its position in the list.',
      params: LanguageParams,
      body: DefaultPromptsBody,
      response: { 200: DefaultPrompts },
    },
    handler: (context) => async (request) => ({
      prompts: (
        await replaceDefaultPrompts(context.db, context.caches, request.params.language, request.body.prompts)
      ).map(promptView),
    }),
  }),
];
