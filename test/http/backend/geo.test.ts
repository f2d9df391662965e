import { beforeAll, describe, expect, it } from 'vitest';
import { LIST_SCOPE } from '../../../src/http/backend/openapi.js';
import { useApps } from '../../support/apps.js';
import { operationsOfDocument, operationsOfScopes } from '../openapi/route-lists.js';

const service = useApps(['backend', 'admin'], { listen: true });
let key: string;
let saudiArabia: { id: string };
let riyadhId: string;

async function partnerKey(scopes: string[], tenantId?: string): Promise<{ id: string; key: string }> {
  const response = await service.admin('POST', '/partner-keys', {
    name: 'test',
    scopes,
    ...(tenantId && { tenant_id: tenantId }),
  });
  expect(response.statusCode).toBe(201);
  return response.json();
}

function get(path: string, headers: Record<string, string> = {}) {
  return fetch(`${service.urls.backend}${path}`, { headers: { authorization: `Api-Key ${key}`, ...headers } });
}

async function list(path: string, headers: Record<string, string> = {}) {
  const response = await get(path, headers);
  expect(response.status, await response.clone().text()).toBe(200);
  return response.json();
}

beforeAll(async () => {
  key = (await partnerKey(['countries:read', 'cities:read'])).key;
  saudiArabia = (await service.admin('GET', '/countries/SA')).json().country;
  const { cities } = (await service.admin('GET', '/cities?name=Riyadh&country=SA')).json();
  riyadhId = cities.find(
    (city: { name: string; capital: string }) => city.name === 'Riyadh' && city.capital === 'primary',
  ).id;
});

describe('backend host: real reference data', () => {
  it('lists all 250 countries by name, Saudi Arabia with +966 and a flag served as SVG', async () => {
    const page = await list('/v1/countries/?limit=100');
    expect(page.count).toBe(250);
    const names = page.results.map((country: { name: string }) => country.name);
    expect(names).toEqual([...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    const all = [
      ...page.results,
      ...(await list('/v1/countries/?limit=100&offset=100')).results,
      ...(await list('/v1/countries/?limit=100&offset=200')).results,
    ];
    expect(new Set(all.map((country: { id: string }) => country.id)).size).toBe(250);
    const sa = all.find((country: { code: string }) => country.code === 'SA');
    expect(sa).toEqual({
      id: saudiArabia.id,
      code: 'SA',
      name: 'Saudi Arabia',
      phone_code: '+966',
      supported: false,
      flag: `${service.urls.backend}/static/flags/sa.svg`,
    });
    const flag = await fetch(sa.flag);
    expect(flag.status).toBe(200);
    expect(flag.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
    expect(flag.headers.get('cache-control')).toMatch(/max-age=\d{6,}/);
    expect(await flag.text()).toContain('<svg');
    expect((await fetch(`${service.urls.backend}/static/flags/zz.svg`)).status).toBe(404);
    expect((await fetch(`${service.urls.backend}/static/flags/..%2Fpackage.svg`)).status).toBe(404);
  });

  it('lists Riyadh as a primary capital at its coordinates', async () => {
    const page = await list(`/v1/cities/?country=${saudiArabia.id}&limit=100`);
    expect(page.count).toBeGreaterThan(100);
    const riyadh = [
      ...page.results,
      ...(await list(`/v1/cities/?country=${saudiArabia.id}&limit=100&offset=100`)).results,
    ]
      .concat((await list(`/v1/cities/?country=${saudiArabia.id}&limit=100&offset=200`)).results)
      .find((city: { id: string }) => city.id === riyadhId);
    expect(riyadh).toMatchObject({ name: 'Riyadh', capital: 'primary', images: [], country: saudiArabia.id });
    expect(riyadh.coordinates.type).toBe('Point');
    expect(riyadh.coordinates.coordinates[0]).toBeCloseTo(46.72, 1);
    expect(riyadh.coordinates.coordinates[1]).toBeCloseTo(24.69, 1);
  });

  it('orders cities by name then id and counts all 125k', async () => {
    const page = await list('/v1/cities/?limit=100&offset=60000');
    expect(page.count).toBe(125_109);
    const keys = page.results.map((city: { name: string; id: string }) => [city.name, city.id]);
    const sorted = [...keys].sort((a, b) =>
      a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0,
    );
    expect(keys).toEqual(sorted);
    const deep = await list('/v1/cities/?offset=125100');
    expect(deep.results).toHaveLength(9);
    expect(deep.next).toBeNull();
  });
});

describe('backend host: paging', () => {
  it('defaults to limit 20 offset 0 and clamps limit to 100', async () => {
    const first = await list('/v1/countries/');
    expect(first.results).toHaveLength(20);
    expect(first.previous).toBeNull();
    expect(first.next).toBe(`${service.urls.backend}/v1/countries/?limit=20&offset=20`);
    const clamped = await list('/v1/countries/?limit=1000');
    expect(clamped.results).toHaveLength(100);
    expect(clamped.next).toBe(`${service.urls.backend}/v1/countries/?limit=100&offset=100`);
  });

  it('links the middle and the last page, keeping the filters', async () => {
    const base = `${service.urls.backend}/v1/cities/?country=${saudiArabia.id}`;
    const middle = await list(`/v1/cities/?country=${saudiArabia.id}&limit=10&offset=30`);
    expect(middle.next).toBe(`${base}&limit=10&offset=40`);
    expect(middle.previous).toBe(`${base}&limit=10&offset=20`);
    const lastOffset = Math.floor((middle.count - 1) / 10) * 10;
    const last = await list(`/v1/cities/?country=${saudiArabia.id}&limit=10&offset=${lastOffset}`);
    expect(last.next).toBeNull();
    expect(last.previous).toBe(`${base}&limit=10&offset=${lastOffset - 10}`);
    expect(last.results.length).toBe(middle.count - lastOffset);
    // Following `next` from the first page walks the same list.
    const first = await list(`/v1/cities/?country=${saudiArabia.id}&limit=10`);
    const second = await (await fetch(first.next, { headers: { authorization: `Api-Key ${key}` } })).json();
    expect(second.results[0]).toEqual(
      (await list(`/v1/cities/?country=${saudiArabia.id}&limit=10&offset=10`)).results[0],
    );
    const countries = await list('/v1/countries/?limit=100&offset=200');
    expect(countries.next).toBeNull();
    expect(countries.previous).toBe(`${service.urls.backend}/v1/countries/?limit=100&offset=100`);
  });

  it('answers past the end with no results and a previous link', async () => {
    const page = await list('/v1/countries/?offset=1000');
    expect(page).toMatchObject({ count: 250, next: null, results: [] });
    expect(page.previous).toBe(`${service.urls.backend}/v1/countries/?limit=20&offset=230`);
  });

  it('filters by country: only its cities; an unknown country has none', async () => {
    const page = await list(`/v1/cities/?country=${saudiArabia.id}&limit=100`);
    expect(page.results.every((city: { country: string }) => city.country === saudiArabia.id)).toBe(true);
    const none = await list('/v1/cities/?country=00000000-0000-4000-8000-000000000000');
    expect(none).toEqual({ count: 0, next: null, previous: null, results: [] });
  });
});

describe('backend host: has_attractions', () => {
  it('returns only supported cities with at least one attraction', async () => {
    const { cities } = (await service.admin('GET', '/cities?name=Jeddah&country=SA')).json();
    const jeddah = cities[0].id;
    const { cities: meccas } = (await service.admin('GET', '/cities?name=Mecca&country=SA')).json();
    const mecca = meccas[0].id;
    // Riyadh: supported with an attraction. Jeddah: an attraction but not supported. Mecca: supported, none.
    expect((await service.admin('PATCH', `/cities/${riyadhId}`, { supported: true })).statusCode).toBe(200);
    expect(
      (await service.admin('POST', `/cities/${riyadhId}/attractions`, { name: 'Masmak Fortress' })).statusCode,
    ).toBe(201);
    expect((await service.admin('POST', `/cities/${jeddah}/attractions`, { name: 'Al-Balad' })).statusCode).toBe(201);
    expect((await service.admin('PATCH', `/cities/${mecca}`, { supported: true })).statusCode).toBe(200);

    for (const value of ['true', '1']) {
      const page = await list(`/v1/cities/?has_attractions=${value}`);
      expect(page.count).toBe(1);
      expect(page.results.map((city: { id: string }) => city.id)).toEqual([riyadhId]);
    }
    const withCountry = await list(`/v1/cities/?has_attractions=true&country=${saudiArabia.id}`);
    expect(withCountry.results.map((city: { id: string }) => city.id)).toEqual([riyadhId]);
    const otherCountry = (await service.admin('GET', '/countries/AE')).json().country.id;
    expect((await list(`/v1/cities/?has_attractions=true&country=${otherCountry}`)).count).toBe(0);
    // false (or 0) applies no filter.
    for (const value of ['false', '0'])
      expect((await list(`/v1/cities/?has_attractions=${value}`)).count).toBe(125_109);
    expect((await list('/v1/cities/?has_attractions=0&limit=5')).next).toBe(
      `${service.urls.backend}/v1/cities/?has_attractions=false&limit=5&offset=5`,
    );
    // Unsupporting the city removes it at once.
    await service.admin('PATCH', `/cities/${riyadhId}`, { supported: false });
    expect((await list('/v1/cities/?has_attractions=true')).count).toBe(0);
    await service.admin('PATCH', `/cities/${riyadhId}`, { supported: true });
  });
});

describe('backend host: auth', () => {
  it("401 without a key, with a wrong scheme, an unknown key, a revoked key and a deactivated tenant's key", async () => {
    const unauthorized = async (headers: Record<string, string>) => {
      const response = await fetch(`${service.urls.backend}/v1/countries/`, { headers });
      expect(response.status).toBe(401);
      const body = await response.json();
      expect(Object.keys(body)).toEqual(['detail']);
      expect(typeof body.detail).toBe('string');
    };
    await unauthorized({});
    await unauthorized({ authorization: `Bearer ${key}` });
    await unauthorized({ authorization: 'Api-Key bpk_not-a-real-key' });
    const revoked = await partnerKey(['countries:read']);
    expect(
      (await fetch(`${service.urls.backend}/v1/countries/`, { headers: { authorization: `api-key ${revoked.key}` } }))
        .status,
    ).toBe(200);
    await service.admin('DELETE', `/partner-keys/${revoked.id}`);
    await unauthorized({ authorization: `Api-Key ${revoked.key}` });
    const { tenant } = await service.createTenant();
    const tenantKey = await partnerKey(['countries:read'], tenant.id);
    expect(
      (await fetch(`${service.urls.backend}/v1/countries/`, { headers: { authorization: `API-KEY ${tenantKey.key}` } }))
        .status,
    ).toBe(200);
    await service.admin('PATCH', `/tenants/${tenant.id}`, { is_active: false });
    await unauthorized({ authorization: `Api-Key ${tenantKey.key}` });
  });

  it('403 when the key lacks the scope, before the query is validated', async () => {
    const countriesOnly = await partnerKey(['countries:read']);
    const headers = { authorization: `Api-Key ${countriesOnly.key}` };
    expect((await fetch(`${service.urls.backend}/v1/countries/`, { headers })).status).toBe(200);
    for (const path of ['/v1/cities/', '/v1/cities/?limit=abc']) {
      const response = await fetch(`${service.urls.backend}${path}`, { headers });
      expect(response.status).toBe(403);
      expect(await response.json()).toEqual({ detail: expect.stringContaining('cities:read') });
    }
  });
});

describe('backend host: invalid parameters', () => {
  it.each([
    ['limit=0', 'limit', 'greater_than_equal'],
    ['limit=-5', 'limit', 'greater_than_equal'],
    ['limit=1.5', 'limit', 'int_parsing'],
    ['limit=abc', 'limit', 'int_parsing'],
    ['limit=', 'limit', 'int_parsing'],
    ['offset=-1', 'offset', 'greater_than_equal'],
    ['offset=2.5', 'offset', 'int_parsing'],
    ['offset=x', 'offset', 'int_parsing'],
    ['offset=', 'offset', 'int_parsing'],
    ['country=not-a-uuid', 'country', 'uuid_parsing'],
    ['country=', 'country', 'uuid_parsing'],
    ['has_attractions=yes', 'has_attractions', 'enum'],
    ['has_attractions=', 'has_attractions', 'enum'],
  ])('422 for %s', async (query, param, type) => {
    const response = await get(`/v1/cities/?${query}`);
    expect(response.status).toBe(422);
    expect(await response.json()).toEqual({ detail: [{ loc: ['query', param], msg: expect.any(String), type }] });
  });

  it('lists every invalid parameter at once, on countries too', async () => {
    const response = await get('/v1/cities/?limit=0&offset=-1&country=x&has_attractions=2');
    expect(response.status).toBe(422);
    const { detail } = await response.json();
    expect(detail.map((entry: { loc: string[] }) => entry.loc)).toEqual([
      ['query', 'limit'],
      ['query', 'offset'],
      ['query', 'country'],
      ['query', 'has_attractions'],
    ]);
    const countries = await get('/v1/countries/?limit=abc');
    expect(countries.status).toBe(422);
    expect((await countries.json()).detail[0].loc).toEqual(['query', 'limit']);
  });

  it('400 for a query that is not valid percent-encoding, as for a path', async () => {
    for (const query of ['search=%ZZab', 'search=%FFab']) {
      const response = await get(`/v1/cities/?${query}`);
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({ detail: expect.stringMatching(/^Malformed request/) });
    }
  });

  it('answers unknown paths 404 with a detail', async () => {
    const response = await get('/v1/nothing/');
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ detail: expect.any(String) });
  });

  it('answers a wrong method on a path it serves 405 with Allow and a detail, as Django REST Framework does', async () => {
    for (const [method, path] of [
      ['POST', '/v1/countries/'],
      ['DELETE', '/v1/cities/'],
      ['PUT', '/static/flags/sa.svg'],
    ]) {
      const response = await fetch(`${service.urls.backend}${path}`, { method });
      expect(response.status, `${method} ${path}`).toBe(405);
      expect(response.headers.get('allow')).toMatch(/^GET, HEAD/);
      expect(await response.json()).toEqual({ detail: `Method "${method}" not allowed.` });
    }
  });
});

describe('backend host: Arabic, ETag, OpenAPI', () => {
  it('returns Arabic names with Accept-Language: ar, English otherwise', async () => {
    const arabicSa = async (header: string) => {
      const response = await get('/v1/countries/?code=sa', { 'accept-language': header });
      expect(response.headers.get('vary')).toMatch(/accept-language/i);
      const body = await response.json();
      return {
        language: response.headers.get('content-language'),
        sa: body.results.find((c: { code: string }) => c.code === 'SA'),
      };
    };
    expect(await arabicSa('ar')).toMatchObject({ language: 'ar', sa: { name: 'السعودية' } });
    expect(await arabicSa('ar-SA,en;q=0.5')).toMatchObject({ language: 'ar', sa: { name: 'السعودية' } });
    expect(await arabicSa('en-US,en;q=0.9,ar;q=0.8')).toMatchObject({ language: 'en', sa: { name: 'Saudi Arabia' } });
    expect(await arabicSa('fr, ar;q=0.3')).toMatchObject({ language: 'ar' });
    expect(await arabicSa('ar;q=0, en;q=0.1')).toMatchObject({ language: 'en' });
    expect(await arabicSa('de')).toMatchObject({ language: 'en', sa: { name: 'Saudi Arabia' } });

    const cities = await list(`/v1/cities/?country=${saudiArabia.id}&limit=100`, { 'accept-language': 'ar' });
    expect(cities.results.some((city: { name: string }) => city.name === 'الرياض')).toBe(true);
    // A city without an Arabic name keeps its English one.
    const anywhere = await list('/v1/cities/?limit=100&offset=120000', { 'accept-language': 'ar' });
    expect(anywhere.results.some((city: { name: string }) => /^[A-Za-z]/.test(city.name))).toBe(true);
  });

  it('answers 304 to a matching If-None-Match until the data changes', async () => {
    const path = `/v1/cities/?country=${saudiArabia.id}&limit=5`;
    const first = await get(path);
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^"[^"]+"$/);
    const again = await get(path, { 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.headers.get('etag')).toBe(etag);
    expect((await get(path, { 'if-none-match': `W/${etag}, "other"` })).status).toBe(304);
    // Another page, another language: another ETag.
    expect((await get(`${path}&offset=5`, { 'if-none-match': etag })).status).toBe(200);
    expect((await get(path, { 'if-none-match': etag, 'accept-language': 'ar' })).status).toBe(200);
    // An admin change makes it stale.
    await service.admin('PATCH', `/cities/${riyadhId}`, { images: ['https://example.com/riyadh.jpg'] });
    const changed = await get(path, { 'if-none-match': etag });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(etag);
  });

  it('serves OpenAPI 3.1 without auth, with the GeoNames attribution', async () => {
    const response = await fetch(`${service.urls.backend}/v1/openapi.json`);
    expect(response.status).toBe(200);
    const document = await response.json();
    expect(document.openapi).toBe('3.1.0');
    expect(document.info.description).toMatch(/GeoNames/);
    expect(document.info.description).toMatch(/Creative Commons Attribution 4\.0/);
    expect(operationsOfDocument(document)).toEqual(expect.arrayContaining(operationsOfScopes([LIST_SCOPE])));
  });
});
