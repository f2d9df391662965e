// The default suggested prompts of each language as an ordered list to edit and save at once;
// Arabic is shown and edited right to left.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { LANGUAGES, type Language } from '../../../../languages.js';
import { listDefaultPrompts, replaceDefaultPrompts, TEXT_MAX_CHARACTERS } from '../../../../prompts/index.js';
import { Language as LanguageSchema } from '../../../shapes/prompt.js';
import { DefaultPromptsBody } from '../../prompts.js';
import { type Html, html } from '../html.js';
import { consoleUrl, may, page, postForm } from '../layout.js';
import { answer, type ConsoleDependencies, sendPage, texts } from '../respond.js';

const LANGUAGE_NAMES: Record<Language, string> = { en: 'English', ar: 'Arabic (العربية)' };
const DIRECTION: Record<Language, 'ltr' | 'rtl'> = { en: 'ltr', ar: 'rtl' };
/** Empty rows offered for new prompts (the script adds more). */
const BLANK_ROWS = 2;

function promptRow(language: Language, value: string): Html {
  return html`<li class="prompt-row"><input name="text" value="${value}" maxlength="${TEXT_MAX_CHARACTERS}" lang="${language}" dir="${DIRECTION[language]}" aria-label="Prompt"><span class="row-tools" hidden><button type="button" data-move="up" title="Move up" aria-label="Move up">↑</button><button type="button" data-move="down" title="Move down" aria-label="Move down">↓</button><button type="button" data-remove title="Remove" aria-label="Remove">✕</button></span></li>`;
}

export const promptRoutes: FastifyPluginAsyncTypebox<ConsoleDependencies> = async (app, { context }) => {
  const { db, caches } = context;
  const hide = true;

  app.get(
    '/prompts',
    { schema: { hide, querystring: Type.Object({ language: Type.Optional(LanguageSchema) }) } },
    async (request, reply) => {
      const language = request.query.language ?? 'en';
      const prompts = await listDefaultPrompts(db, language);
      const tabs = LANGUAGES.map(
        (code) =>
          html`<a href="${consoleUrl(`/prompts?language=${code}`)}"${code === language ? html` aria-current="page"` : ''}>${LANGUAGE_NAMES[code]}</a>`,
      );
      const rows = [...prompts.map((prompt) => prompt.text), ...new Array(BLANK_ROWS).fill('')].map((value) =>
        promptRow(language, value),
      );
      const content = html`<nav class="tabs">${tabs}</nav>
<p class="hint">The prompts a tenant's widget shows when the tenant has none of its own, in this order. Empty rows are ignored; saving replaces the whole list.</p>
${
  may(request.consoleView)
    ? postForm(
        request.consoleView,
        `/prompts/${language}`,
        html`<ol class="prompt-list card" dir="${DIRECTION[language]}" lang="${language}" data-prompt-list>${rows}</ol>
<p><button type="button" data-add-row hidden>Add a prompt</button> <button>Save ${LANGUAGE_NAMES[language]} prompts</button></p>`,
      )
    : html`<ol class="prompt-list card" dir="${DIRECTION[language]}" lang="${language}">${prompts.map(
        (prompt) => html`<li>${prompt.text}</li>`,
      )}</ol>`
}`;
      return sendPage(reply, page(request.consoleView, 'prompts', 'Default suggested prompts', content));
    },
  );

  app.post(
    '/prompts/:language',
    {
      schema: { hide, params: Type.Object({ language: LanguageSchema }), body: DefaultPromptsBody },
      config: {
        consoleForm: (fields) => ({
          prompts: texts(fields, 'text')
            .map((value) => value.trim())
            .filter(Boolean)
            .map((value) => ({ text: value })),
        }),
      },
    },
    async (request, reply) => {
      const { language } = request.params;
      const saved = await replaceDefaultPrompts(db, caches, language, request.body.prompts);
      return answer(reply, {
        redirect: `/prompts?language=${language}`,
        notice: `${saved.length} ${LANGUAGE_NAMES[language]} prompts saved.`,
      });
    },
  );
};
