// `/api/v1/suggested-prompts/`: a tenant's own prompts, and the effective set its widget shows.
import { Type } from '@sinclair/typebox';
import {
  createPrompt,
  deletePrompt,
  effectivePrompts,
  listPrompts,
  SORT_ORDER_MAX,
  SORT_ORDER_MIN,
  TEXT_MAX_CHARACTERS,
  updatePrompt,
} from '../../prompts/index.js';
import { sendCachedResponse } from '../response-cache.js';
import { route } from '../route.js';
import { Uuid } from '../schemas.js';
import { Language, PromptObject, PromptSource, promptView } from '../shapes/prompt.js';
import { Envelope, ok, ResourceIdParams, resourceId } from './envelope.js';
import { credentialScope } from './tenant-auth.js';

/** The same, as a shared schema of the integrations host (see openapi.ts). */
export const Prompt = Type.Object(PromptObject.properties, { $id: 'SuggestedPrompt', title: 'Suggested prompt' });
const PromptRef = Type.Ref(Prompt);

const PromptFields = {
  language: Language,
  text: Type.String({
    description: `Trimmed; 1 to ${TEXT_MAX_CHARACTERS} characters after trimming`,
    examples: PromptObject.properties.text.examples,
  }),
  sort_order: Type.Integer({
    minimum: SORT_ORDER_MIN,
    maximum: SORT_ORDER_MAX,
    description: 'Lower numbers appear first; default 0',
    examples: PromptObject.properties.sort_order.examples,
  }),
  is_active: Type.Boolean({ description: 'Whether the widget may show it; default true' }),
};

const CreateBody = Type.Object(
  {
    language: PromptFields.language,
    text: PromptFields.text,
    sort_order: Type.Optional(PromptFields.sort_order),
    is_active: Type.Optional(PromptFields.is_active),
  },
  { additionalProperties: false },
);
const UpdateBody = Type.Partial(Type.Object(PromptFields), {
  additionalProperties: false,
  description: 'Any of the fields, at least one',
});

const PromptData = Envelope(Type.Object({ prompt: PromptRef }));
const tags = ['suggested prompts'];

const promptId = (id: string) => resourceId(id, 'Suggested prompt');

export const promptRoutes = [
  route({
    method: 'GET',
    url: '/suggested-prompts/',
    schema: {
      operationId: 'listSuggestedPrompts',
      tags,
      summary: "List the tenant's own prompts, active and inactive",
      description: 'Ordered by language, sort_order, created_at.',
      querystring: Type.Object({ language: Type.Optional(Language) }),
      response: { 200: Envelope(Type.Object({ prompts: Type.Array(PromptRef) })) },
    },
    handler: (context) => async (request) =>
      ok('Suggested prompts.', {
        prompts: (await listPrompts(context.db, credentialScope(request), request.query.language)).map(promptView),
      }),
  }),

  route({
    method: 'GET',
    url: '/suggested-prompts/effective/',
    schema: {
      operationId: 'getEffectiveSuggestedPrompts',
      tags,
      summary: 'The prompts the widget shows for a language',
      description:
        "The tenant's active prompts for the language when it has at least one; otherwise the default " +
        "set of the same language. Never another language's prompts.",
      querystring: Type.Object({ language: Language }),
      response: {
        200: Envelope(
          Type.Object({
            language: Language,
            source: PromptSource,
            prompts: Type.Array(PromptRef),
          }),
        ),
      },
    },
    handler: (context) => (request, reply) => {
      const owner = credentialScope(request);
      const { language } = request.query;
      // Cached bytes until any prompt changes (src/http/response-cache.ts), per tenant and mode.
      sendCachedResponse(context, request, reply, async () => {
        const effective = await effectivePrompts(context.db, owner, language);
        return {
          payload: ok('Effective suggested prompts.', { ...effective, prompts: effective.prompts.map(promptView) }),
        };
      });
    },
  }),

  route({
    method: 'POST',
    url: '/suggested-prompts/',
    schema: {
      operationId: 'createSuggestedPrompt',
      tags,
      summary: 'Create a prompt',
      body: CreateBody,
      response: { 201: PromptData },
    },
    handler: (context) => async (request, reply) =>
      reply.code(201).send(
        ok('Suggested prompt created.', {
          prompt: promptView(await createPrompt(context.db, context.caches, credentialScope(request), request.body)),
        }),
      ),
  }),

  route({
    method: 'PATCH',
    url: '/suggested-prompts/:id/',
    schema: {
      operationId: 'updateSuggestedPrompt',
      tags,
      summary: 'Change a prompt (partial); `name` follows `text`',
      params: ResourceIdParams,
      body: UpdateBody,
      response: { 200: PromptData },
    },
    handler: (context) => async (request) =>
      ok('Suggested prompt updated.', {
        prompt: promptView(
          await updatePrompt(
            context.db,
            context.caches,
            credentialScope(request),
            promptId(request.params.id),
            request.body,
          ),
        ),
      }),
  }),

  route({
    method: 'DELETE',
    url: '/suggested-prompts/:id/',
    schema: {
      operationId: 'deleteSuggestedPrompt',
      tags,
      summary: 'Delete a prompt',
      params: ResourceIdParams,
      response: { 200: Envelope(Type.Object({ id: Uuid })) },
    },
    handler: (context) => async (request) =>
      ok(
        'Suggested prompt deleted.',
        await deletePrompt(context.db, context.caches, credentialScope(request), promptId(request.params.id)),
      ),
  }),
];
