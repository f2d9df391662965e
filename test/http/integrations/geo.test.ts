import { beforeAll, describe, expect, it } from 'vitest';
import { useApps, useTenant } from '../../support/apps.js';

const service = useApps(['integrations', 'backend', 'admin'], { listen: true });
const tenant = useTenant(service);
let partnerKey: string;
let saudiArabiaId: string;

function get(path: string, headers: Record<string, string> = {}) {
  return fetch(`${service.urls.integrations}${path}`, {
    headers: { authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}`, ...headers },
  });
}

async function envelope(path: string, headers: Record<string, string> = {}) {
  const response = await get(path, headers);
  expect(response.status, await response.clone().text()).toBe(200);
  const body = await response.json();
  expect(body).toMatchObject({ success: true, message: expect.any(String), error: null });
  return body.data;
}

beforeAll(async () => {
  partnerKey = (
    await service.admin('POST', '/partner-keys', { name: 'k', scopes: ['countries:read', 'cities:read'] })
  ).json().key;
  saudiArabiaId = (await service.admin('GET', '/countries/SA')).json().country.id;
});

describe('integrations host: countries and cities', () => {
  it('wraps the paged list of countries in the envelope, links on this host', async () => {
    const data = await envelope('/api/v1/countries/?limit=10&offset=10');
    expect(data.count).toBe(250);
    expect(data.results).toHaveLength(10);
    expect(data.next).toBe(`${service.urls.integrations}/api/v1/countries/?limit=10&offset=20`);
    expect(data.previous).toBe(`${service.urls.integrations}/api/v1/countries/?limit=10&offset=0`);
    const first = await envelope('/api/v1/countries');
    expect(first.previous).toBeNull();
    expect(first.results).toHaveLength(20);
  });

  it('returns the same country objects as the backend host, flag on the backend host', async () => {
    const here = await envelope('/api/v1/countries/?limit=100&offset=100');
    const response = await fetch(`${service.urls.backend}/v1/countries/?limit=100&offset=100`, {
      headers: { authorization: `Api-Key ${partnerKey}` },
    });
    const there = await response.json();
    expect(here.results).toEqual(there.results);
    const sa = here.results.find((country: { code: string }) => country.code === 'SA');
    expect(sa).toMatchObject({
      name: 'Saudi Arabia',
      phone_code: '+966',
      flag: `${service.urls.backend}/static/flags/sa.svg`,
    });
    const flag = await fetch(sa.flag);
    expect(flag.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
  });

  it('filters cities by country and has_attractions, with the same links rules', async () => {
    const data = await envelope(`/api/v1/cities/?country=${saudiArabiaId}&limit=5`);
    expect(data.count).toBeGreaterThan(100);
    expect(data.results.every((city: { country: string }) => city.country === saudiArabiaId)).toBe(true);
    expect(data.next).toBe(`${service.urls.integrations}/api/v1/cities/?country=${saudiArabiaId}&limit=5&offset=5`);

    const { cities } = (await service.admin('GET', '/cities?name=Riyadh&country=SA')).json();
    const riyadh = cities[0];
    await service.admin('PATCH', `/cities/${riyadh.id}`, { supported: true });
    await service.admin('POST', `/cities/${riyadh.id}/attractions`, { name: 'Masmak Fortress' });
    const withAttractions = await envelope('/api/v1/cities/?has_attractions=true');
    expect(withAttractions).toMatchObject({ count: 1, next: null, previous: null });
    expect(withAttractions.results[0]).toMatchObject({ id: riyadh.id, name: 'Riyadh', capital: 'primary' });
  });

  it('answers Arabic names with Accept-Language: ar', async () => {
    const response = await get(`/api/v1/cities/?country=${saudiArabiaId}&limit=100`, { 'accept-language': 'ar-SA' });
    expect(response.headers.get('content-language')).toBe('ar');
    expect(response.headers.get('vary')).toMatch(/accept-language/i);
    const { data } = await response.json();
    expect(data.results.some((city: { name: string }) => city.name === 'الرياض')).toBe(true);
  });

  it('answers 304 to a matching If-None-Match', async () => {
    const first = await get('/api/v1/countries/');
    const etag = first.headers.get('etag')!;
    expect((await get('/api/v1/countries/', { 'if-none-match': etag })).status).toBe(304);
    // The backend host's ETag for the same list is another (other body), so never confused.
    const backend = await fetch(`${service.urls.backend}/v1/countries/`, {
      headers: { authorization: `Api-Key ${partnerKey}` },
    });
    expect(backend.headers.get('etag')).not.toBe(etag);
  });

  it.each([
    ['limit=0', 'limit'],
    ['limit=1.5', 'limit'],
    ['limit=', 'limit'],
    ['offset=-1', 'offset'],
    ['offset=abc', 'offset'],
    ['country=123', 'country'],
    ['has_attractions=maybe', 'has_attractions'],
  ])('400 VALIDATION_ERROR for %s', async (query, field) => {
    const response = await get(`/api/v1/cities/?${query}`);
    expect(response.status).toBe(400);
    const body = await response.json();
    expect(body).toMatchObject({ success: false, data: null, error: { code: 'VALIDATION_ERROR' } });
    expect(body.error.details).toEqual([expect.objectContaining({ field, location: 'query' })]);
  });

  it('401 in the envelope without the SSO secret; a backend partner key is not one', async () => {
    for (const authorization of [undefined, `Api-Key ${partnerKey}`]) {
      const response = await fetch(`${service.urls.integrations}/api/v1/countries/`, {
        headers: authorization ? { authorization } : {},
      });
      expect(response.status).toBe(401);
      expect(await response.json()).toMatchObject({ success: false, data: null, error: { code: 'UNAUTHORIZED' } });
    }
  });
});
