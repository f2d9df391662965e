// `/api/v1/suggested-prompts/`: CRUD, the effective set of spec §1 rule 3, tenant isolation,
// the admin default sets, and every bad input answered with a 4xx envelope.
import { beforeAll, describe, expect, it } from 'vitest';
import { useApps } from '../../support/apps.js';
import { type ApiRequest, apiAs, expectError, expectOk } from './api.js';

const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const BASE = '/api/v1/suggested-prompts/';

interface Prompt {
  id: string;
  language: string;
  text: string;
  name: string;
  sort_order: number;
  is_active: boolean;
  source: string;
  created_at: string;
  updated_at: string;
}

describe('suggested prompts', () => {
  const service = useApps(['integrations', 'admin']);
  let api: ApiRequest;

  const tenantApi = async () => apiAs(service, (await service.createTenant()).credentials.sso_hmac_secret);
  const create = async (request: ApiRequest, body: Record<string, unknown>): Promise<Prompt> =>
    expectOk<'createSuggestedPrompt'>(await request('POST', BASE, body), 201).prompt;
  const list = async (request: ApiRequest, query = ''): Promise<Prompt[]> =>
    expectOk<'listSuggestedPrompts'>(await request('GET', `${BASE}${query}`)).prompts;
  const effective = async (request: ApiRequest, language: string) =>
    expectOk<'getEffectiveSuggestedPrompts'>(await request('GET', `${BASE}effective/?language=${language}`));

  beforeAll(async () => {
    api = await tenantApi();
  });

  it('creates with defaults: sort_order 0, active, trimmed text, name = text, source tenant', async () => {
    const response = await api('POST', BASE, { language: 'en', text: '  Where should I eat tonight?  \n' });
    expect(response.statusCode).toBe(201);
    expect(response.json().message).toBe('Suggested prompt created.');
    const { prompt } = expectOk<'createSuggestedPrompt'>(response, 201);
    expect(Object.keys(prompt).sort()).toEqual([
      'created_at',
      'id',
      'is_active',
      'language',
      'name',
      'sort_order',
      'source',
      'text',
      'updated_at',
    ]);
    expect(prompt).toMatchObject({
      language: 'en',
      text: 'Where should I eat tonight?',
      name: 'Where should I eat tonight?',
      sort_order: 0,
      is_active: true,
      source: 'tenant',
    });
    expect(prompt.id).toMatch(UUID);
    expect(prompt.created_at).toMatch(ISO_WITH_OFFSET);
    expect(prompt.updated_at).toMatch(ISO_WITH_OFFSET);
  });

  it('creates with the given sort_order and is_active, and a 500-character text', async () => {
    const request = await tenantApi();
    const long = 'ب'.repeat(500);
    const prompt = await create(request, { language: 'ar', text: long, sort_order: -7, is_active: false });
    expect(prompt).toMatchObject({ language: 'ar', text: long, sort_order: -7, is_active: false });
  });

  it("lists the tenant's own prompts, active and inactive, by language, sort_order, created_at", async () => {
    const request = await tenantApi();
    const made = [];
    for (const body of [
      { language: 'en', text: 'en second', sort_order: 2 },
      { language: 'ar', text: 'ar first', sort_order: 5 },
      { language: 'en', text: 'en first', sort_order: 1, is_active: false },
      { language: 'en', text: 'en second, later', sort_order: 2 },
    ]) {
      made.push(await create(request, body));
    }
    expect((await list(request)).map((prompt) => prompt.text)).toEqual([
      'ar first',
      'en first',
      'en second',
      'en second, later',
    ]);
    expect((await list(request, '?language=en')).map((prompt) => prompt.text)).toEqual([
      'en first',
      'en second',
      'en second, later',
    ]);
    expect((await list(request, '?language=ar')).map((prompt) => prompt.id)).toEqual([made[1].id]);
  });

  it('refuses an unsupported language filter with a 400 naming it', async () => {
    for (const language of ['fr', 'EN', '', 'en,ar']) {
      const error = expectError(
        await api('GET', `${BASE}?language=${encodeURIComponent(language)}`),
        400,
        'VALIDATION_ERROR',
      );
      expect(error.details).toEqual([expect.objectContaining({ field: 'language', location: 'query' })]);
    }
  });

  it('updates partially: is_active both ways, name follows text, other fields kept', async () => {
    const request = await tenantApi();
    const prompt = await create(request, { language: 'en', text: 'Original', sort_order: 4 });
    const patch = async (body: Record<string, unknown>): Promise<Prompt> =>
      expectOk<'updateSuggestedPrompt'>(await request('PATCH', `${BASE}${prompt.id}/`, body)).prompt;

    const off = await patch({ is_active: false });
    expect(off).toMatchObject({ id: prompt.id, is_active: false, text: 'Original', sort_order: 4 });
    expect((await list(request)).find((p) => p.id === prompt.id)?.is_active).toBe(false);
    const on = await patch({ is_active: true });
    expect(on.is_active).toBe(true);
    expect((await list(request)).find((p) => p.id === prompt.id)?.is_active).toBe(true);

    const renamed = await patch({ text: '  Renamed  ' });
    expect(renamed).toMatchObject({ text: 'Renamed', name: 'Renamed', is_active: true, sort_order: 4, language: 'en' });
    expect(renamed.created_at).toBe(prompt.created_at);
    expect(Date.parse(renamed.updated_at)).toBeGreaterThanOrEqual(Date.parse(prompt.updated_at));
    expect((await patch({ language: 'ar', sort_order: -1 })).language).toBe('ar');
    expect((await list(request, '?language=ar')).map((p) => p.id)).toEqual([prompt.id]);
  });

  it('refuses an empty PATCH body with a 400 saying a field is needed', async () => {
    const prompt = await create(api, { language: 'en', text: 'Keep me' });
    const response = await api('PATCH', `${BASE}${prompt.id}/`, {});
    const error = expectError(response, 400, 'VALIDATION_ERROR');
    expect(response.json().message).toMatch(/at least one of language, text, sort_order, is_active/);
    expect(error.details).toEqual([expect.objectContaining({ field: '(root)' })]);
  });

  it('deletes: 200 with the id, then gone from every list; a second delete is a 404', async () => {
    const request = await tenantApi();
    const prompt = await create(request, { language: 'ar', text: 'احذفني' });
    expect((await effective(request, 'ar')).source).toBe('tenant');
    const response = await request('DELETE', `${BASE}${prompt.id}/`);
    expect(expectOk<'deleteSuggestedPrompt'>(response)).toEqual({ id: prompt.id });
    expect(await list(request)).toEqual([]);
    expect(await list(request, '?language=ar')).toEqual([]);
    const after = await effective(request, 'ar');
    expect(after.source).toBe('default');
    expect(after.prompts.map((p: Prompt) => p.id)).not.toContain(prompt.id);
    expectError(await request('DELETE', `${BASE}${prompt.id}/`), 404, 'NOT_FOUND');
    expectError(await request('PATCH', `${BASE}${prompt.id}/`, { text: 'back?' }), 404, 'NOT_FOUND');
  });

  it('deletes without a body though the request says JSON, as many clients send every request', async () => {
    const request = await tenantApi();
    const prompt = await create(request, { language: 'en', text: 'Delete me, JSON client' });
    const response = await request('DELETE', `${BASE}${prompt.id}/`, undefined, { 'content-type': 'application/json' });
    expect(expectOk<'deleteSuggestedPrompt'>(response)).toEqual({ id: prompt.id });
  });

  it("keeps tenants apart: another tenant's prompt is a 404 to update or delete, and never listed", async () => {
    const owner = await tenantApi();
    const other = await tenantApi();
    const prompt = await create(owner, { language: 'en', text: 'Mine only' });

    expectError(await other('PATCH', `${BASE}${prompt.id}/`, { is_active: false }), 404, 'NOT_FOUND');
    expectError(await other('DELETE', `${BASE}${prompt.id}/`), 404, 'NOT_FOUND');
    expect(await list(other)).toEqual([]);
    const seen = await effective(other, 'en');
    expect(seen.source).toBe('default');
    expect(seen.prompts.map((p: Prompt) => p.id)).not.toContain(prompt.id);

    // Untouched for its owner.
    expect(await list(owner)).toEqual([prompt]);
  });

  it('answers ids that are not UUIDs with a 404, like unknown ids', async () => {
    for (const id of ['123', 'not-a-uuid', '00000000-0000-4000-8000-00000000000', "1' or '1'='1", '%00']) {
      expectError(await api('PATCH', `${BASE}${encodeURIComponent(id)}/`, { text: 'x' }), 404, 'NOT_FOUND');
      expectError(await api('DELETE', `${BASE}${encodeURIComponent(id)}/`), 404, 'NOT_FOUND');
    }
    expectError(await api('DELETE', `${BASE}00000000-0000-4000-8000-000000000000/`), 404, 'NOT_FOUND');
  });

  describe('effective set (spec §1 rule 3)', () => {
    it("follows the tenant's active prompts per language, else that language's defaults, never the other language", async () => {
      const request = await tenantApi();
      const defaults = {
        en: (await service.admin('GET', '/default-prompts/en')).json().prompts as Prompt[],
        ar: (await service.admin('GET', '/default-prompts/ar')).json().prompts as Prompt[],
      };
      const expectDefaults = async (language: 'en' | 'ar') => {
        const data = await effective(request, language);
        expect(data).toEqual({ language, source: 'default', prompts: defaults[language] });
        expect(data.prompts.length).toBeGreaterThan(0);
        for (const prompt of data.prompts)
          expect(prompt).toMatchObject({ language, source: 'default', is_active: true });
      };
      const expectTenant = async (language: 'en' | 'ar', ids: string[]) => {
        const data = await effective(request, language);
        expect(data.source).toBe('tenant');
        expect(data.language).toBe(language);
        expect(data.prompts.map((p: Prompt) => p.id)).toEqual(ids);
        for (const prompt of data.prompts)
          expect(prompt).toMatchObject({ language, source: 'tenant', is_active: true });
      };

      await expectDefaults('en');
      await expectDefaults('ar');

      // An active English prompt: English switches to the tenant's, Arabic stays on its defaults.
      const en1 = await create(request, { language: 'en', text: 'English one', sort_order: 2 });
      await expectTenant('en', [en1.id]);
      await expectDefaults('ar');

      // An inactive prompt is never shown, and alone it does not count.
      const ar1 = await create(request, { language: 'ar', text: 'عربي معطل', is_active: false });
      await expectDefaults('ar');
      const en2 = await create(request, { language: 'en', text: 'English zero', sort_order: 1, is_active: false });
      await expectTenant('en', [en1.id]);
      await request('PATCH', `${BASE}${en2.id}/`, { is_active: true });
      await expectTenant('en', [en2.id, en1.id]);

      // Activating the Arabic prompt switches Arabic only.
      await request('PATCH', `${BASE}${ar1.id}/`, { is_active: true });
      await expectTenant('ar', [ar1.id]);
      await expectTenant('en', [en2.id, en1.id]);

      // Deactivating every English prompt sends English back to its defaults, not to Arabic.
      await request('PATCH', `${BASE}${en1.id}/`, { is_active: false });
      await request('PATCH', `${BASE}${en2.id}/`, { is_active: false });
      await expectDefaults('en');
      await expectTenant('ar', [ar1.id]);

      // Deleting the Arabic prompt sends Arabic back to its defaults, while English has only inactive ones.
      await request('DELETE', `${BASE}${ar1.id}/`);
      await expectDefaults('ar');
      await expectDefaults('en');

      // Moving a prompt to the other language moves it in the effective sets too.
      await request('PATCH', `${BASE}${en1.id}/`, { is_active: true, language: 'ar' });
      await expectTenant('ar', [en1.id]);
      await expectDefaults('en');
    });

    it('requires a supported language', async () => {
      for (const query of ['', '?language=', '?language=fr', '?language=AR', '?lang=en']) {
        const error = expectError(await api('GET', `${BASE}effective/${query}`), 400, 'VALIDATION_ERROR');
        expect(error.details).toEqual([expect.objectContaining({ field: 'language', location: 'query' })]);
      }
    });
  });

  describe('default sets on the admin API', () => {
    it('are seeded: six prompts per language, the Arabic ones in Arabic script', async () => {
      for (const language of ['en', 'ar']) {
        const prompts = (await service.admin('GET', `/default-prompts/${language}`)).json().prompts as Prompt[];
        expect(prompts).toHaveLength(6);
        expect(prompts.map((p) => p.sort_order)).toEqual([0, 1, 2, 3, 4, 5]);
        for (const prompt of prompts) {
          expect(prompt).toMatchObject({ language, source: 'default', is_active: true, name: prompt.text });
          if (language === 'ar') expect(prompt.text).toMatch(/^[\u0600-\u06FF\s؟،]+$/);
          else expect(prompt.text).toMatch(/^[\x20-\x7E]+$/);
        }
      }
    });

    it('are replaced per language at once, and the effective set follows', async () => {
      const request = await tenantApi();
      const arBefore = (await service.admin('GET', '/default-prompts/ar')).json().prompts;
      const response = await service.admin('PUT', '/default-prompts/en', {
        prompts: [{ text: '  Third  ', sort_order: 30 }, { text: 'First' }, { text: 'Second', sort_order: 2 }],
      });
      expect(response.statusCode).toBe(200);
      const replaced = response.json().prompts as Prompt[];
      expect(replaced.map((p) => [p.text, p.sort_order])).toEqual([
        ['First', 1],
        ['Second', 2],
        ['Third', 30],
      ]);
      expect((await service.admin('GET', '/default-prompts/en')).json().prompts).toEqual(replaced);
      expect(await effective(request, 'en')).toEqual({ language: 'en', source: 'default', prompts: replaced });
      // The other language is untouched.
      expect((await service.admin('GET', '/default-prompts/ar')).json().prompts).toEqual(arBefore);
    });

    it('are replaced whole when replacements come at once: one set stays, never a mix', async () => {
      const sets = Array.from({ length: 12 }, (_, set) => [{ text: `Set ${set} a` }, { text: `Set ${set} b` }]);
      const answers = await Promise.all(
        sets.map((prompts) => service.admin('PUT', '/default-prompts/en', { prompts })),
      );
      const texts = (prompts: Prompt[]) => prompts.map((prompt) => prompt.text);
      answers.forEach((answer, set) => {
        expect(answer.statusCode).toBe(200);
        expect(texts(answer.json().prompts)).toEqual([`Set ${set} a`, `Set ${set} b`]);
      });
      const stored = texts((await service.admin('GET', '/default-prompts/en')).json().prompts);
      expect(stored).toHaveLength(2);
      expect(sets.map((prompts) => prompts.map((prompt) => prompt.text))).toContainEqual(stored);
    });

    it('refuses a bad replacement and keeps the current set', async () => {
      const before = (await service.admin('GET', '/default-prompts/ar')).json().prompts;
      const cases: [string, unknown, number, string?][] = [
        ['/default-prompts/fr', { prompts: [{ text: 'x' }] }, 400],
        ['/default-prompts/ar', { prompts: [] }, 400, 'prompts'],
        ['/default-prompts/ar', { prompts: [{ text: 'ok' }, { text: '   ' }] }, 400, 'prompts.1.text'],
        ['/default-prompts/ar', { prompts: [{ text: 'x'.repeat(501) }] }, 400, 'prompts.0.text'],
        ['/default-prompts/ar', { prompts: [{ text: 'ok', extra: 1 }] }, 400, 'prompts.0.extra'],
        ['/default-prompts/ar', { prompts: [{ text: 'ok', sort_order: 1.5 }] }, 400, 'prompts.0.sort_order'],
        ['/default-prompts/ar', { prompts: 'x' }, 400, 'prompts'],
        ['/default-prompts/ar', [{ text: 'x' }], 400],
      ];
      for (const [path, body, status, field] of cases) {
        const response = await service.admin('PUT', path, body);
        expect(response.statusCode, JSON.stringify(body)).toBe(status);
        expect(response.json().error.code).toBe('VALIDATION_ERROR');
        if (field) expect(response.json().error.details.map((d: { field: string }) => d.field)).toContain(field);
      }
      expect((await service.admin('GET', '/default-prompts/ar')).json().prompts).toEqual(before);
    });
  });

  describe('bad input: a documented 4xx in the envelope, never a 5xx', () => {
    type Case = {
      name: string;
      method?: 'POST' | 'PATCH';
      body?: unknown;
      raw?: string;
      type?: string;
      status: number;
      code: string;
      field?: string;
    };
    const valid = { language: 'en', text: 'Fine' };
    const cases: Case[] = [
      { name: 'empty object', body: {}, status: 400, code: 'VALIDATION_ERROR', field: 'language' },
      { name: 'missing text', body: { language: 'en' }, status: 400, code: 'VALIDATION_ERROR', field: 'text' },
      { name: 'missing language', body: { text: 'x' }, status: 400, code: 'VALIDATION_ERROR', field: 'language' },
      {
        name: 'unsupported language',
        body: { ...valid, language: 'fr' },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'language',
      },
      {
        name: 'upper-case language',
        body: { ...valid, language: 'EN' },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'language',
      },
      {
        name: 'language as array',
        body: { ...valid, language: ['en'] },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'language',
      },
      { name: 'text as number', body: { ...valid, text: 123 }, status: 400, code: 'VALIDATION_ERROR', field: 'text' },
      { name: 'text as boolean', body: { ...valid, text: true }, status: 400, code: 'VALIDATION_ERROR', field: 'text' },
      {
        name: 'text as object',
        body: { ...valid, text: { en: 'x' } },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'text',
      },
      { name: 'text as array', body: { ...valid, text: ['x'] }, status: 400, code: 'VALIDATION_ERROR', field: 'text' },
      { name: 'text null', body: { ...valid, text: null }, status: 400, code: 'VALIDATION_ERROR', field: 'text' },
      {
        name: 'language null',
        body: { ...valid, language: null },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'language',
      },
      {
        name: 'sort_order null',
        body: { ...valid, sort_order: null },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'sort_order',
      },
      {
        name: 'is_active null',
        body: { ...valid, is_active: null },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'is_active',
      },
      { name: 'empty text', body: { ...valid, text: '' }, status: 400, code: 'VALIDATION_ERROR', field: 'text' },
      {
        name: 'whitespace-only text',
        body: { ...valid, text: ' \t\n\u00a0 ' },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'text',
      },
      {
        name: '501-character text',
        body: { ...valid, text: 'a'.repeat(501) },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'text',
      },
      {
        name: '501 emoji',
        body: { ...valid, text: '🧳'.repeat(501) },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'text',
      },
      {
        name: 'oversize text',
        body: { ...valid, text: 'a'.repeat(20_000) },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'text',
      },
      {
        name: 'NUL in text',
        body: { ...valid, text: 'a\u0000b' },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'text',
      },
      {
        name: 'lone surrogate in text',
        raw: '{"language":"en","text":"a\\ud800b"}',
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'text',
      },
      {
        name: 'sort_order as string',
        body: { ...valid, sort_order: '1' },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'sort_order',
      },
      {
        name: 'sort_order fractional',
        body: { ...valid, sort_order: 1.5 },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'sort_order',
      },
      {
        name: 'sort_order too large',
        body: { ...valid, sort_order: 1_000_001 },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'sort_order',
      },
      {
        name: 'sort_order too small',
        body: { ...valid, sort_order: -1_000_001 },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'sort_order',
      },
      {
        name: 'sort_order beyond int32',
        body: { ...valid, sort_order: 2 ** 40 },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'sort_order',
      },
      {
        name: 'sort_order a fraction that rounds to an integer',
        raw: '{"language":"en","text":"x","sort_order":0.99999999999999999999}',
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'sort_order',
      },
      {
        name: 'sort_order huge',
        raw: '{"language":"en","text":"x","sort_order":1e400}',
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'sort_order',
      },
      {
        name: 'is_active as string',
        body: { ...valid, is_active: 'false' },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'is_active',
      },
      {
        name: 'is_active as 0',
        body: { ...valid, is_active: 0 },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'is_active',
      },
      {
        name: 'unknown field',
        body: { ...valid, colour: 'red' },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'colour',
      },
      {
        name: 'name is not writable',
        body: { ...valid, name: 'x' },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'name',
      },
      {
        name: 'source is not writable',
        body: { ...valid, source: 'default' },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'source',
      },
      {
        name: 'id is not writable',
        body: { ...valid, id: '00000000-0000-4000-8000-000000000000' },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'id',
      },
      {
        name: 'nested tenant field',
        body: { ...valid, meta: { tenant_id: 'x' } },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'meta',
      },
      { name: 'top-level tenant field', body: { ...valid, tenant_slug: 'x' }, status: 400, code: 'TENANT_NOT_ALLOWED' },
      { name: 'array instead of object', body: [valid], status: 400, code: 'VALIDATION_ERROR' },
      { name: 'string body', raw: '"hello"', status: 400, code: 'VALIDATION_ERROR' },
      { name: 'number body', raw: '42', status: 400, code: 'VALIDATION_ERROR' },
      { name: 'null body', raw: 'null', status: 400, code: 'VALIDATION_ERROR' },
      { name: 'not JSON', raw: '{language: en}', status: 400, code: 'INVALID_JSON' },
      { name: 'truncated JSON', raw: '{"language":"en","text":"x"', status: 400, code: 'INVALID_JSON' },
      { name: 'empty body with JSON type', raw: '', status: 400, code: 'VALIDATION_ERROR', field: '(root)' },
      { name: 'duplicate key', raw: '{"language":"en","text":"a","text":"b"}', status: 400, code: 'INVALID_JSON' },
      {
        name: '__proto__ key',
        raw: '{"language":"en","text":"a","__proto__":{"x":1}}',
        status: 400,
        code: 'INVALID_JSON',
      },
      { name: 'deep nesting', raw: `${'['.repeat(20_000)}${']'.repeat(20_000)}`, status: 400, code: 'INVALID_JSON' },
      {
        name: 'text/plain body',
        raw: '{"language":"en","text":"x"}',
        type: 'text/plain',
        status: 415,
        code: 'UNSUPPORTED_MEDIA_TYPE',
      },
      {
        name: 'form body',
        raw: 'language=en&text=x',
        type: 'application/x-www-form-urlencoded',
        status: 415,
        code: 'UNSUPPORTED_MEDIA_TYPE',
      },
      {
        name: 'body over 64 KiB',
        body: { ...valid, text: 'a'.repeat(70 * 1024) },
        status: 413,
        code: 'PAYLOAD_TOO_LARGE',
      },
      { name: 'PATCH empty body', method: 'PATCH', body: {}, status: 400, code: 'VALIDATION_ERROR', field: '(root)' },
      {
        name: 'PATCH null text',
        method: 'PATCH',
        body: { text: null },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'text',
      },
      {
        name: 'PATCH blank text',
        method: 'PATCH',
        body: { text: '   ' },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'text',
      },
      {
        name: 'PATCH 501 characters',
        method: 'PATCH',
        body: { text: 'x'.repeat(501) },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'text',
      },
      {
        name: 'PATCH bad language',
        method: 'PATCH',
        body: { language: 'de' },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'language',
      },
      {
        name: 'PATCH is_active string',
        method: 'PATCH',
        body: { is_active: 'true' },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'is_active',
      },
      {
        name: 'PATCH unknown field',
        method: 'PATCH',
        body: { enabled: true },
        status: 400,
        code: 'VALIDATION_ERROR',
        field: 'enabled',
      },
      { name: 'PATCH array', method: 'PATCH', body: [{ text: 'x' }], status: 400, code: 'VALIDATION_ERROR' },
      { name: 'PATCH not JSON', method: 'PATCH', raw: 'text=x', status: 400, code: 'INVALID_JSON' },
      {
        name: 'PATCH tenant field',
        method: 'PATCH',
        body: { tenant: 'x', text: 'y' },
        status: 400,
        code: 'TENANT_NOT_ALLOWED',
      },
    ];
    let target: Prompt;
    beforeAll(async () => {
      target = await create(api, { language: 'en', text: 'Untouchable', sort_order: 9 });
    });

    it.each(cases)('$name → $status $code', async ({ method = 'POST', body, raw, type, status, code, field }) => {
      const url = method === 'POST' ? BASE : `${BASE}${target.id}/`;
      const response = await service.apps.integrations!.inject({
        method,
        url,
        headers: {
          authorization: `Api-Key ${(await service.createTenant()).credentials.sso_hmac_secret}`,
          'content-type': type ?? 'application/json',
        },
        payload: raw ?? JSON.stringify(body),
      });
      const error = expectError(response, status, code);
      if (field) expect(error.details?.map((detail) => detail.field)).toContain(field);
      if (code === 'VALIDATION_ERROR' && field) expect(response.json().message).toContain(error.details?.[0].field);
    });

    it('left nothing behind', async () => {
      const prompts = await list(api);
      expect(prompts.find((p) => p.id === target.id)).toEqual(target);
    });
  });
});
