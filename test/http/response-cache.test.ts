// Listing pages and effective prompt sets are answered from cached bytes (src/http/response-cache.ts):
// a change to their data shows on the very next request, a revoked credential is refused on a
// cached page, and the cache keeps to READ_CACHE_MB.
import { beforeAll, describe, expect, it } from 'vitest';
import { responseCacheBytes } from '../../src/http/response-cache.js';
import { useTenant } from '../support/apps.js';
import { askedTwiceFromCache } from '../support/cache-hits.js';
import { useService } from '../support/service.js';

const service = useService();
const tenant = useTenant(service);
let partner: { id: string; key: string };

beforeAll(async () => {
  partner = (await service.admin('POST', '/partner-keys', { name: 'cache', scopes: ['countries:read'] })).json();
});

async function backendCountries(key = partner.key) {
  const response = await fetch(`${service.urls.backend}/v1/countries/?limit=100&offset=150`, {
    headers: { authorization: `Api-Key ${key}` },
  });
  return { status: response.status, etag: response.headers.get('etag'), body: await response.json() };
}

async function integrationsCountries() {
  const response = await fetch(`${service.urls.integrations}/api/v1/countries/?limit=100&offset=150`, {
    headers: { authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}` },
  });
  expect(response.status).toBe(200);
  return { etag: response.headers.get('etag'), body: await response.json() };
}

async function effectivePrompts(secret = tenant.credentials.sso_hmac_secret) {
  const response = await fetch(`${service.urls.integrations}/api/v1/suggested-prompts/effective/?language=en`, {
    headers: { authorization: `Api-Key ${secret}` },
  });
  return { status: response.status, body: await response.json() };
}

/** Saudi Arabia is on the page from offset 150 (countries by name). */
const saudiArabia = (body: { results: { code: string; supported: boolean }[] }) =>
  body.results.find((country) => country.code === 'SA');

describe('listing pages from cached bytes', () => {
  it('answers a repeated page from the cache, and the next request after an admin change shows the change', async () => {
    await service.admin('PATCH', '/countries/SA', { supported: false });
    const [first, again] = await askedTwiceFromCache(service, () => backendCountries());
    expect(again).toEqual(first);
    expect(saudiArabia(first.body)?.supported).toBe(false);
    const enveloped = await integrationsCountries();
    expect(saudiArabia(enveloped.body.data)?.supported).toBe(false);

    expect((await service.admin('PATCH', '/countries/SA', { supported: true })).statusCode).toBe(200);
    const changed = await backendCountries();
    expect(saudiArabia(changed.body)?.supported).toBe(true);
    expect(changed.etag).not.toBe(first.etag);
    expect(saudiArabia((await integrationsCountries()).body.data)?.supported).toBe(true);
  });

  it('refuses a revoked key on a cached page', async () => {
    const key = (await service.admin('POST', '/partner-keys', { name: 'revoked', scopes: ['countries:read'] })).json();
    expect((await backendCountries(key.key)).status).toBe(200);
    expect((await backendCountries(key.key)).status).toBe(200);
    expect((await service.admin('DELETE', `/partner-keys/${key.id}`)).statusCode).toBe(200);
    expect((await backendCountries(key.key)).status).toBe(401);
  });
});

describe('effective prompts from cached bytes', () => {
  it('shows a change of the default set on the next request', async () => {
    await service.admin('PUT', '/default-prompts/en', { prompts: [{ text: 'Before' }] });
    const [before, again] = await askedTwiceFromCache(service, () => effectivePrompts());
    expect(before.body.data.prompts.map((p: { text: string }) => p.text)).toEqual(['Before']);
    expect(again).toEqual(before);
    await service.admin('PUT', '/default-prompts/en', { prompts: [{ text: 'After' }] });
    expect((await effectivePrompts()).body.data.prompts.map((p: { text: string }) => p.text)).toEqual(['After']);
  });

  it('refuses a revoked SSO secret on a cached set', async () => {
    const other = await service.createTenant();
    const secret = other.credentials.sso_hmac_secret;
    expect((await effectivePrompts(secret)).status).toBe(200);
    expect((await effectivePrompts(secret)).status).toBe(200);
    const { credentials } = (await service.admin('GET', `/tenants/${other.tenant.id}/credentials`)).json();
    const sso = credentials.find((credential: { kind: string }) => credential.kind === 'sso_hmac_secret');
    expect((await service.admin('DELETE', `/credentials/${sso.id}`)).statusCode).toBe(200);
    const refused = await effectivePrompts(secret);
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('UNAUTHORIZED');
  });
});

describe('READ_CACHE_MB', () => {
  const small = useService({ env: { READ_CACHE_MB: '1' } });

  it('keeps the cached responses within the bound', async () => {
    const { key } = (await small.admin('POST', '/partner-keys', { name: 'bound', scopes: ['cities:read'] })).json();
    // About 25 kB a page of 100 cities: 60 pages are half again over 1 MiB.
    for (let page = 0; page < 60; page++) {
      const response = await fetch(`${small.urls.backend}/v1/cities/?limit=100&offset=${page * 100}`, {
        headers: { authorization: `Api-Key ${key}` },
      });
      expect(response.status).toBe(200);
      await response.arrayBuffer();
      expect(responseCacheBytes(small.context)).toBeLessThanOrEqual(1024 * 1024);
    }
    expect(responseCacheBytes(small.context)).toBeGreaterThan(512 * 1024);
  });
});
