// The `/api/v1/` skin: envelope on every answer, auth, tenant guard, routing, no CORS.
import { beforeAll, describe, expect, it } from 'vitest';
import { buildIntegrationsApp } from '../../../src/http/integrations/app.js';
import { createLogger } from '../../../src/logger.js';
import { type TestTenant, useApps, useTenant } from '../../support/apps.js';
import { type ApiRequest, apiAs, expectError, expectOk } from './api.js';

describe('integrations host /api/v1 skin', () => {
  const service = useApps(['integrations', 'admin'], { listen: true });
  const owner = useTenant(service);
  let api: ApiRequest;
  beforeAll(async () => {
    api = apiAs(service, owner.credentials.sso_hmac_secret);
  });

  it('answers a success in the envelope, with nothing else at the top level', async () => {
    const data = expectOk<'listSuggestedPrompts'>(await api('GET', '/api/v1/suggested-prompts/'));
    expect(data).toEqual({ prompts: [] });
  });

  it('serves every route with and without the trailing slash', async () => {
    for (const path of ['/api/v1/suggested-prompts', '/api/v1/suggested-prompts/effective']) {
      for (const url of [path, `${path}/`]) {
        expect((await api('GET', `${url}?language=en`)).statusCode, url).toBe(200);
      }
    }
    const created = expectOk<'createSuggestedPrompt'>(
      await api('POST', '/api/v1/suggested-prompts', { language: 'en', text: 'No slash' }),
      201,
    );
    const id = created.prompt.id;
    expectOk(await api('PATCH', `/api/v1/suggested-prompts/${id}`, { sort_order: 3 }));
    expectOk(await api('PATCH', `/api/v1/suggested-prompts/${id}/`, { sort_order: 4 }));
    expectOk(await api('DELETE', `/api/v1/suggested-prompts/${id}`));
    const missingTrip = '00000000-0000-4000-8000-000000000000';
    expectError(await api('GET', `/api/v1/trips/${missingTrip}`), 404, 'NOT_FOUND');
    expectError(await api('GET', `/api/v1/trips/${missingTrip}/`), 404, 'NOT_FOUND');
  });

  describe('401 UNAUTHORIZED with "Unauthorized."', () => {
    const cases: [string, (tenant: TestTenant, extra: Record<string, string>) => Record<string, string>][] = [
      ['no Authorization header', () => ({})],
      ['an empty Authorization header', () => ({ authorization: '' })],
      ['the scheme without a secret', () => ({ authorization: 'Api-Key' })],
      ['an unknown secret', () => ({ authorization: 'Api-Key sso_not-a-real-secret' })],
      ['the Bearer scheme', (t) => ({ authorization: `Bearer ${t.credentials.sso_hmac_secret}` })],
      ['the Basic scheme', (t) => ({ authorization: `Basic ${t.credentials.sso_hmac_secret}` })],
      ['the bare secret', (t) => ({ authorization: t.credentials.sso_hmac_secret })],
      ['the secret in X-API-KEY instead', (t) => ({ 'x-api-key': t.credentials.sso_hmac_secret })],
      ['the partner API key as Api-Key', (t) => ({ authorization: `Api-Key ${t.credentials.partner_api_key}` })],
      ['the payment endpoint secret', (t) => ({ authorization: `Api-Key ${t.credentials.payment_endpoint_secret}` })],
      ['a backend partner key as Api-Key', (_t, extra) => ({ authorization: `Api-Key ${extra.backendKey}` })],
      [
        'the secret with different case',
        (t) => ({ authorization: `Api-Key ${t.credentials.sso_hmac_secret.toUpperCase()}` }),
      ],
    ];
    let extra: Record<string, string>;
    beforeAll(async () => {
      const key = await service.admin('POST', '/partner-keys', { name: 'backend', scopes: ['countries:read'] });
      extra = { backendKey: key.json().key };
    });

    it.each(cases)('%s', async (_name, headersOf) => {
      for (const [method, url] of [
        ['GET', '/api/v1/suggested-prompts/'],
        ['GET', '/api/v1/suggested-prompts/effective/?language=en'],
        ['GET', '/api/v1/trips/00000000-0000-4000-8000-000000000000/'],
        ['GET', '/api/v1/no-such-thing/'],
      ] as const) {
        const response = await apiAs(service, null)(method, url, undefined, headersOf(owner, extra));
        const error = expectError(response, 401, 'UNAUTHORIZED');
        expect(response.json().message).toBe('Unauthorized.');
        // What to fix: test/http/credential-hints.test.ts.
        expect(response.headers['www-authenticate']).toBe('Api-Key');
        expect(error.hint).toEqual(expect.any(String));
      }
    });

    it('accepts the scheme word in any case', async () => {
      const secret = owner.credentials.sso_hmac_secret;
      for (const scheme of ['Api-Key', 'api-key', 'API-KEY']) {
        const response = await apiAs(service, null)('GET', '/api/v1/suggested-prompts/', undefined, {
          authorization: `${scheme} ${secret}`,
        });
        expect(response.statusCode, scheme).toBe(200);
      }
    });

    it('refuses a revoked secret at once, while another secret of the tenant keeps working', async () => {
      const tenant = await service.createTenant();
      const issued = (
        await service.admin('POST', `/tenants/${tenant.tenant.id}/credentials`, { kind: 'sso_hmac_secret' })
      ).json();
      expectOk(await apiAs(service, issued.secret)('GET', '/api/v1/suggested-prompts/'));
      expect((await service.admin('DELETE', `/credentials/${issued.id}`)).statusCode).toBe(200);
      expectError(await apiAs(service, issued.secret)('GET', '/api/v1/suggested-prompts/'), 401, 'UNAUTHORIZED');
      expectOk(await apiAs(service, tenant.credentials.sso_hmac_secret)('GET', '/api/v1/suggested-prompts/'));
    });

    it('refuses every secret of an inactive tenant, and accepts them again once it is reactivated', async () => {
      const tenant = await service.createTenant();
      const tenantApi = apiAs(service, tenant.credentials.sso_hmac_secret);
      expectOk(await tenantApi('GET', '/api/v1/suggested-prompts/'));
      await service.admin('PATCH', `/tenants/${tenant.tenant.id}`, { is_active: false });
      const refused = await tenantApi('POST', '/api/v1/suggested-prompts/', { language: 'en', text: 'x' });
      expectError(refused, 401, 'UNAUTHORIZED');
      expect(refused.json().message).toBe('Unauthorized.');
      await service.admin('PATCH', `/tenants/${tenant.tenant.id}`, { is_active: true });
      expectOk(await tenantApi('GET', '/api/v1/suggested-prompts/'));
    });
  });

  it('400 MALFORMED_REQUEST for a query that is not valid percent-encoding, as for a path', async () => {
    for (const query of ['search=%ZZab', 'search=%FFab']) {
      expectError(await api('GET', `/api/v1/cities/?${query}`), 400, 'MALFORMED_REQUEST');
    }
  });

  describe('400 TENANT_NOT_ALLOWED: the tenant comes from the credential', () => {
    it.each(['tenant', 'tenant_id', 'tenant_slug', 'TENANT_ID', 'tenant[]', 'tenant[slug]'])(
      'in the query: %s',
      async (field) => {
        for (const url of ['/api/v1/suggested-prompts/', '/api/v1/suggested-prompts/effective/?language=en']) {
          const sep = url.includes('?') ? '&' : '?';
          const response = await api('GET', `${url}${sep}${field}=${owner.tenant.slug}`);
          const error = expectError(response, 400, 'TENANT_NOT_ALLOWED');
          expect(error).toEqual({ code: 'TENANT_NOT_ALLOWED' });
          expect(response.json().message).toMatch(/credential/);
        }
      },
    );

    it.each(['tenant', 'tenant_id', 'tenant_slug'])('in the body: %s', async (field) => {
      const value = field === 'tenant_id' ? owner.tenant.id : owner.tenant.slug;
      const created = await api('POST', '/api/v1/suggested-prompts/', { language: 'en', text: 'Hi', [field]: value });
      expectError(created, 400, 'TENANT_NOT_ALLOWED');
      const prompt = expectOk<'createSuggestedPrompt'>(
        await api('POST', '/api/v1/suggested-prompts/', { language: 'en', text: 'Hi' }),
        201,
      ).prompt;
      expectError(
        await api('PATCH', `/api/v1/suggested-prompts/${prompt.id}/`, { [field]: value }),
        400,
        'TENANT_NOT_ALLOWED',
      );
      // Nothing was created by the refused request.
      const listed = expectOk<'listSuggestedPrompts'>(
        await api('GET', '/api/v1/suggested-prompts/?language=en'),
      ).prompts;
      expect(listed.filter((p) => p.text === 'Hi')).toHaveLength(1);
      expectOk(await api('DELETE', `/api/v1/suggested-prompts/${prompt.id}/`));
    });

    it("in the path: the caller's own slug or id, or a tenant segment, on a path that is not a route", async () => {
      for (const url of [
        `/api/v1/${owner.tenant.slug}/suggested-prompts/`,
        `/api/v1/tenants/${owner.tenant.slug}/suggested-prompts/`,
        `/api/v1/${owner.tenant.id}/trips/`,
        `/api/v1/tenant/suggested-prompts/`,
      ]) {
        expectError(await api('GET', url), 400, 'TENANT_NOT_ALLOWED');
      }
    });
  });

  it('answers an unknown route with a 404 envelope', async () => {
    for (const url of ['/api/v1/no-such-thing/', '/api/v1/suggested-prompts/a/b/c/', '/api/v2/suggested-prompts/']) {
      const error = expectError(await api('GET', url), 404, 'NOT_FOUND');
      expect(error).toEqual({ code: 'NOT_FOUND' });
    }
  });

  it('answers a wrong method with a 405 envelope and an Allow header', async () => {
    const id = '00000000-0000-4000-8000-000000000000';
    const cases: [string, string, string][] = [
      ['PUT', '/api/v1/suggested-prompts/', 'GET, HEAD, POST'],
      ['DELETE', '/api/v1/suggested-prompts', 'GET, HEAD, POST'],
      ['POST', `/api/v1/suggested-prompts/${id}/`, 'PATCH, DELETE'],
      ['PUT', `/api/v1/suggested-prompts/${id}`, 'PATCH, DELETE'],
      // `effective` is also a (never existing) prompt id, so PATCH and DELETE are routed there too.
      ['POST', '/api/v1/suggested-prompts/effective/', 'GET, HEAD, PATCH, DELETE'],
      ['DELETE', `/api/v1/trips/${id}/`, 'GET, HEAD'],
    ];
    for (const [method, url, allow] of cases) {
      const response = await api(method as 'PUT', url, method === 'DELETE' ? undefined : {});
      expectError(response, 405, 'METHOD_NOT_ALLOWED');
      expect(response.headers.allow?.toString().split(', ').sort(), `${method} ${url}`).toEqual(
        allow.split(', ').sort(),
      );
    }
    expectError(await api('PATCH', '/api/v1/suggested-prompts/effective/', { text: 'x' }), 404, 'NOT_FOUND');
    expectError(await api('DELETE', '/api/v1/suggested-prompts/effective/'), 404, 'NOT_FOUND');
  });

  it('answers an unexpected failure with a 500 envelope that leaks nothing', async () => {
    // A host whose database fails every read, as if the connection dropped mid-request.
    const failing = new Proxy(service.context.db, {
      get: (target, property, receiver) =>
        property === 'select'
          ? () => {
              throw new Error('connection to 10.0.0.7 lost: password=hunter2');
            }
          : Reflect.get(target, property, receiver),
    });
    const app = await buildIntegrationsApp({ ...service.context, db: failing }, createLogger('silent'));
    try {
      const response = await app.inject({
        method: 'GET',
        url: '/api/v1/suggested-prompts/',
        headers: { authorization: `Api-Key ${owner.credentials.sso_hmac_secret}` },
      });
      const error = expectError(response, 500, 'INTERNAL_ERROR');
      expect(error).toEqual({ code: 'INTERNAL_ERROR' });
      expect(response.body).not.toMatch(/hunter2|10\.0\.0\.7|stack/);
    } finally {
      await app.close();
    }
  });

  it('sends no CORS header on any response, preflight included', async () => {
    const base = service.urls.integrations!;
    const origin = { origin: 'https://evil.example' };
    const auth = { authorization: `Api-Key ${owner.credentials.sso_hmac_secret}` };
    const responses = await Promise.all([
      fetch(`${base}/api/v1/suggested-prompts/`, {
        method: 'OPTIONS',
        headers: {
          ...origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization, content-type',
        },
      }),
      fetch(`${base}/api/v1/suggested-prompts/`, {
        method: 'OPTIONS',
        headers: { ...origin, ...auth, 'access-control-request-method': 'GET' },
      }),
      fetch(`${base}/api/v1/suggested-prompts/`, { headers: { ...origin, ...auth } }),
      fetch(`${base}/api/v1/suggested-prompts/`, { headers: origin }),
      fetch(`${base}/api/v1/suggested-prompts/`, {
        method: 'POST',
        headers: { ...origin, ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ language: 'ar', text: 'مرحبا' }),
      }),
      fetch(`${base}/api/v1/no-such-thing/`, { headers: { ...origin, ...auth } }),
      fetch(`${base}/api/v1/openapi.json`, { headers: origin }),
    ]);
    expect(responses.map((response) => response.status)).toEqual([405, 405, 200, 401, 201, 404, 200]);
    for (const response of responses) {
      const corsHeaders = [...response.headers.keys()].filter((name) => name.startsWith('access-control-'));
      expect(corsHeaders, response.url).toEqual([]);
    }
    // The preflight is answered like any other wrong method: in the envelope.
    expect(await responses[0].json()).toMatchObject({
      success: false,
      data: null,
      error: { code: 'METHOD_NOT_ALLOWED' },
    });
  });
});
