// The integrations host's OpenAPI document, and the docs UI on the admin listener only.
import { compileErrors, validate } from '@readme/openapi-parser';
import { beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_SCOPE } from '../../../src/http/admin/openapi.js';
import { RESOURCE_SCOPE } from '../../../src/http/integrations/openapi.js';
import { PAYMENT_CALLBACK_PREFIX } from '../../../src/http/integrations/payment-callback.js';
import type { Json } from '../../../src/http/openapi.js';
import { useApps } from '../../support/apps.js';
import { operationsOfDocument, operationsOfScopes } from '../openapi/route-lists.js';

const DOCUMENTED_ERRORS = ['400', '401', '404', '405', '413', '429', '500', '503'];

/** Every operation of `document`, with its path and method. */
const operationsByPath = (document: Json) =>
  Object.entries(document.paths as Record<string, Json>).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ path, method, operation: operation as Json })),
  );

describe('OpenAPI', () => {
  const service = useApps(['integrations', 'backend', 'admin'], { listen: true });
  let document: Json;
  beforeAll(async () => {
    const response = await fetch(`${service.urls.integrations}/api/v1/openapi.json`);
    expect(response.status).toBe(200);
    document = await response.json();
  });

  it('is a valid OpenAPI 3.1 document, served without auth', async () => {
    expect(document.openapi).toBe('3.1.0');
    // Read here as JSON; the parser's type for it is its own union of OpenAPI documents.
    const result = await validate(structuredClone(document) as Parameters<typeof validate>[0]);
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
    expect((await service.apps.integrations!.inject({ method: 'GET', url: '/api/v1/openapi.json/' })).statusCode).toBe(
      200,
    );
  });

  it('documents the Api-Key scheme in the Authorization header, required by default', () => {
    expect(document.components.securitySchemes.ApiKey).toMatchObject({
      type: 'apiKey',
      in: 'header',
      name: 'Authorization',
    });
    expect(document.components.securitySchemes.ApiKey.description).toContain('Api-Key <secret>');
    expect(document.security).toEqual([{ ApiKey: [] }]);
  });

  it('documents every resource route with its envelope and every error response', () => {
    // Every operation under /api/v1/ but the payment callback, which answers in a body of its own.
    const ours = operationsByPath(document).filter(
      ({ path }) => path.startsWith('/api/v1/') && !path.startsWith(PAYMENT_CALLBACK_PREFIX),
    );
    expect(ours.map(({ method, path }) => `${method.toUpperCase()} ${path}`).sort()).toEqual(
      operationsOfScopes([RESOURCE_SCOPE]).sort(),
    );
    for (const { method, path, operation } of ours) {
      const where = `${method} ${path}`;
      const [success, ...others] = Object.keys(operation.responses).filter((status) => status < '400');
      expect(success, where).toMatch(/^20[01]$/);
      expect(
        others.filter((status) => status !== '304'),
        where,
      ).toEqual([]);
      const schema = operation.responses[success].content['application/json'].schema;
      expect(schema.required, where).toEqual(['success', 'message', 'data', 'error']);
      // A request that may carry a body can also be refused its media type; a route adds its own refusals.
      const errors = method === 'get' ? DOCUMENTED_ERRORS : [...DOCUMENTED_ERRORS, '415'];
      const refusals = Object.keys(operation.responses).filter((status) => status >= '400');
      expect(refusals, where).toEqual(expect.arrayContaining(errors));
      for (const status of refusals) {
        const response = operation.responses[status];
        expect(response.description, `${where} ${status}`).toBeTruthy();
        expect(response.content['application/json'].schema.$ref, `${where} ${status}`).toBe(
          '#/components/schemas/ErrorEnvelope',
        );
      }
    }
    expect(document.components.schemas.ErrorEnvelope.properties.error.properties.code.enum).toContain(
      'TENANT_NOT_ALLOWED',
    );
  });

  it("serves none of the admin listener's docs UI on the integrations host (its own docs: test/http/docs)", async () => {
    for (const url of ['/documentation', '/admin/docs', '/admin/docs/json', '/docs/json']) {
      const response = await fetch(`${service.urls.integrations}${url}`);
      expect(response.status, url).toBeGreaterThanOrEqual(400);
      expect(response.headers.get('content-type'), url).not.toMatch(/html/);
    }
  });

  it('serves the UI on the admin listener, listing the three documents', async () => {
    const page = await fetch(`${service.urls.admin}/admin/docs/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const initializer = await (await fetch(`${service.urls.admin}/admin/docs/static/swagger-initializer.js`)).text();
    for (const url of ['/admin/docs/integrations.json', '/admin/docs/backend.json', '/admin/v1/openapi.json']) {
      expect(initializer).toContain(url);
    }
    const shown = await (await fetch(`${service.urls.admin}/admin/docs/integrations.json`)).json();
    expect({ ...shown, servers: document.servers }).toEqual(document);
    expect(await (await fetch(`${service.urls.admin}/admin/docs/json`)).json()).toEqual(shown);
    const admin = await (await fetch(`${service.urls.admin}/admin/v1/openapi.json`)).json();
    const result = await validate(admin);
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
    expect(operationsOfDocument(admin).sort()).toEqual(operationsOfScopes([ADMIN_SCOPE]).sort());
  });

  it('lets "Try it out" reach each public host through the admin listener, the body relayed as sent', async () => {
    const tenant = await service.createTenant();
    const integrations = await (await fetch(`${service.urls.admin}/admin/docs/integrations.json`)).json();
    const backend = await (await fetch(`${service.urls.admin}/admin/docs/backend.json`)).json();
    expect(integrations.servers.map((server: { url: string }) => server.url)).toEqual([
      '/admin/docs/try/integrations',
      service.urls.integrations,
    ]);
    expect(backend.servers[0].url).toBe('/admin/docs/try/backend');

    const tryIt = (server: string, path: string, init: RequestInit = {}) =>
      fetch(`${service.urls.admin}${server}${path}`, init);
    const auth = { authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}` };
    const cities = await tryIt(integrations.servers[0].url, '/api/v1/cities/?limit=2', { headers: auth });
    expect(cities.status).toBe(200);
    expect(cities.headers.get('etag')).toBeTruthy();
    const body = await cities.json();
    expect(body.data.results).toHaveLength(2);
    expect(body.data.next).toContain(service.urls.integrations);

    const created = await tryIt(integrations.servers[0].url, '/api/v1/suggested-prompts/', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: '{"language": "en", "text": "Relayed"}',
    });
    expect(created.status).toBe(201);
    const callback = await tryIt(integrations.servers[0].url, '/api/v1/payments/notify/', {
      method: 'POST',
      headers: { 'x-api-key': tenant.credentials.partner_api_key, 'content-type': 'application/json' },
      body: '{"invoice_id": "not-a-uuid"}',
    });
    expect(await callback.json()).toEqual({ error: 'Missing transaction_id' });

    const refused = await tryIt(backend.servers[0].url, '/v1/countries/');
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/^Api-Key error_description="No Authorization header\./);
  });
});
