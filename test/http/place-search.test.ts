// Finding a place (DECISIONS §11) on both public hosts: `code` on countries, `search` on countries
// and cities, links that keep them, and lists in Arabic ordered by the Arabic name.
import { beforeAll, describe, expect, it } from 'vitest';
import { useApps, useTenant } from '../support/apps.js';

const service = useApps(['integrations', 'backend', 'admin'], { listen: true });
const tenant = useTenant(service);
let partnerKey: string;
let saudiArabiaId: string;

interface Place {
  id: string;
  name: string;
  code?: string;
}
interface List {
  count: number;
  next: string | null;
  previous: string | null;
  results: Place[];
}

/** What differs between the two hosts: where the lists are, the credential, the body around the list. */
const HOSTS = {
  integrations: {
    prefix: () => `${service.urls.integrations}/api/v1`,
    authorization: () => `Api-Key ${tenant.credentials.sso_hmac_secret}`,
    listOf: (body: { data: List }) => body.data,
  },
  backend: {
    prefix: () => `${service.urls.backend}/v1`,
    authorization: () => `Api-Key ${partnerKey}`,
    listOf: (body: List) => body,
  },
} as const;
type Host = keyof typeof HOSTS;

function get(host: Host, path: string, language = 'en') {
  return fetch(`${HOSTS[host].prefix()}${path}`, {
    headers: { authorization: HOSTS[host].authorization(), 'accept-language': language },
  });
}

async function list(host: Host, path: string, language = 'en'): Promise<List> {
  const response = await get(host, path, language);
  expect(response.status, await response.clone().text()).toBe(200);
  return HOSTS[host].listOf(await response.json());
}

/** The query parameter `name` of a link. */
const parameter = (link: string | null, name: string) => (link === null ? null : new URL(link).searchParams.get(name));

/** Every page of a list, following `next`. */
async function everyPage(host: Host, path: string, language: string): Promise<Place[]> {
  const places: Place[] = [];
  let link: string | null = `${HOSTS[host].prefix()}${path}`;
  while (link) {
    const page = await list(host, link.slice(HOSTS[host].prefix().length), language);
    places.push(...page.results);
    link = page.next;
  }
  return places;
}

const ARABIC = /\p{Script=Arabic}/u;

beforeAll(async () => {
  partnerKey = (
    await service.admin('POST', '/partner-keys', { name: 'k', scopes: ['countries:read', 'cities:read'] })
  ).json().key;
  saudiArabiaId = (await service.admin('GET', '/countries/SA')).json().country.id;
});

describe.each(Object.keys(HOSTS) as Host[])('%s host: finding a place', (host) => {
  it('filters countries by code in any case; an unassigned code has none', async () => {
    for (const code of ['sa', 'SA', 'Sa']) {
      const countries = await list(host, `/countries/?code=${code}`);
      expect(countries).toMatchObject({ count: 1, next: null, previous: null });
      expect(countries.results[0]).toMatchObject({ id: saudiArabiaId, code: 'SA', name: 'Saudi Arabia' });
    }
    expect((await list(host, '/countries/?code=zz')).count).toBe(0);
  });

  it('searches countries in English and Arabic, whatever the case and accents', async () => {
    for (const search of ['saudi', 'SAUDI', 'السعودية', 'سعودي']) {
      const countries = await list(host, `/countries/?search=${encodeURIComponent(search)}`);
      expect(countries.results.map((country) => country.code)).toEqual(['SA']);
    }
    // Accents in the name, none in the search, and the other way round.
    expect((await list(host, '/countries/?search=curacao')).results.map((country) => country.code)).toEqual(['CW']);
    expect((await list(host, '/countries/?search=%C3%85LAND%20isl')).results.map((country) => country.code)).toEqual([
      'AX',
    ]);
    // Combined with code: both must hold.
    expect((await list(host, '/countries/?code=sa&search=saudi')).count).toBe(1);
    expect((await list(host, '/countries/?code=ae&search=saudi')).count).toBe(0);
  });

  it('searches cities in English, whatever the case and accents', async () => {
    for (const search of ['sao paulo', 'SÃO PAULO', 'São Paulo', 'são paulo']) {
      const cities = await list(host, `/cities/?search=${encodeURIComponent(search)}&limit=100`);
      expect(cities.results.map((city) => city.name)).toContain('São Paulo');
      for (const city of cities.results) expect(city.name).toMatch(/s[aã]o paulo/i);
    }
    // Apostrophes of every kind are one: the data writes Ha'il, Jazan's Ḩā’il would be the same.
    const hail = await list(host, `/cities/?search=${encodeURIComponent('hā’il')}&country=${saudiArabiaId}`);
    expect(hail.results.map((city) => city.name)).toContain("Ha'il");
  });

  it('searches cities by their Arabic name, with or without harakat and hamza, combined with country', async () => {
    const riyadh = async (search: string) =>
      (await list(host, `/cities/?search=${encodeURIComponent(search)}&country=${saudiArabiaId}`, 'en')).results.map(
        (city) => city.name,
      );
    expect(await riyadh('الرياض')).toEqual(['Riyadh']);
    expect(await riyadh('الرِّيَاض')).toEqual(['Riyadh']);
    expect(await riyadh('رياض')).toContain('Riyadh');
    // أبها written with a bare alef.
    expect(await riyadh('ابها')).toContain('Abha');
    // In Arabic the match shows its Arabic name.
    const arabic = await list(host, `/cities/?search=${encodeURIComponent('Riyadh')}&country=${saudiArabiaId}`, 'ar');
    expect(arabic.results.map((city) => city.name)).toContain('الرياض');
    // Another country's cities are not in a country's search.
    const uae = (await service.admin('GET', '/countries/AE')).json().country.id;
    expect((await list(host, `/cities/?search=${encodeURIComponent('الرياض')}&country=${uae}`)).count).toBe(0);
  });

  it('keeps code, search and the other filters in next and previous', async () => {
    const first = await list(host, `/cities/?country=${saudiArabiaId}&search=al&limit=5`);
    expect(first.count).toBeGreaterThan(10);
    expect(first.next).toBe(`${HOSTS[host].prefix()}/cities/?country=${saudiArabiaId}&search=al&limit=5&offset=5`);
    const second = await list(host, first.next!.slice(HOSTS[host].prefix().length));
    expect(second.previous).toBe(`${HOSTS[host].prefix()}/cities/?country=${saudiArabiaId}&search=al&limit=5&offset=0`);
    expect(second.results.map((city) => city.id)).not.toContain(first.results[0].id);

    const arabic = await list(host, `/cities/?search=${encodeURIComponent('الم')}&limit=2`, 'ar');
    expect(parameter(arabic.next, 'search')).toBe('الم');
    const countries = await list(host, '/countries/?code=SA&search=saudi&limit=1');
    expect(countries.next).toBeNull();
    const named = await list(host, '/countries/?search=an&limit=1');
    expect(parameter(named.next, 'search')).toBe('an');
    const codes = await list(host, '/countries/?code=sa&offset=1');
    expect(parameter(codes.previous, 'code')).toBe('SA');
  });

  it('orders lists in Arabic by the Arabic name then id, the cities without one after them', async () => {
    const cities = await everyPage(host, `/cities/?country=${saudiArabiaId}&limit=100`, 'ar');
    const english = await everyPage(host, `/cities/?country=${saudiArabiaId}&limit=100`, 'en');
    expect(cities.map((city) => city.id).sort()).toEqual(english.map((city) => city.id).sort());
    expect(cities.map((city) => city.id)).not.toEqual(english.map((city) => city.id));
    const withArabic = cities.filter((city) => ARABIC.test(city.name));
    expect(withArabic.length).toBeGreaterThan(50);
    // Arabic names first, then the English fallbacks.
    expect(cities.slice(0, withArabic.length)).toEqual(withArabic);
    // The embedded server's collation is C: names compare by code point, as strings do here.
    const inOrder = (places: Place[]) =>
      places.every(
        (place, index) =>
          index === 0 ||
          places[index - 1].name < place.name ||
          (places[index - 1].name === place.name && places[index - 1].id < place.id),
      );
    expect(inOrder(withArabic)).toBe(true);
    expect(inOrder(cities.slice(withArabic.length))).toBe(true);
    expect(withArabic.findIndex((city) => city.name === 'أبها')).toBeLessThan(
      withArabic.findIndex((city) => city.name === 'الرياض'),
    );

    const countries = await everyPage(host, '/countries/?limit=100', 'ar');
    expect(countries).toHaveLength(250);
    expect(countries.every((country) => ARABIC.test(country.name))).toBe(true);
    expect(inOrder(countries)).toBe(true);
    // A search in Arabic is in the same order.
    const searched = (await list(host, `/cities/?country=${saudiArabiaId}&search=al&limit=100`, 'ar')).results;
    expect(searched.map((city) => city.id)).toEqual(
      cities.filter((city) => searched.some((match) => match.id === city.id)).map((city) => city.id),
    );
  });

  it.each([
    ['search=a', 'search'],
    ['search=ر', 'search'],
    [`search=${'a'.repeat(101)}`, 'search'],
    ['code=s', 'code'],
    ['code=sau', 'code'],
    ['code=1a', 'code'],
  ])('refuses %s as a validation error', async (query, field) => {
    const path = `/${field === 'code' ? 'countries' : 'cities'}/?${query}`;
    const response = await get(host, path);
    const body = await response.json();
    if (host === 'integrations') {
      expect(response.status).toBe(400);
      expect(body).toMatchObject({ success: false, data: null, error: { code: 'VALIDATION_ERROR' } });
      expect(body.error.details).toEqual([expect.objectContaining({ field, location: 'query' })]);
    } else {
      expect(response.status).toBe(422);
      expect(body).toEqual({ detail: [{ loc: ['query', field], msg: expect.any(String), type: expect.any(String) }] });
    }
    if (field === 'search') {
      // The countries take the same rule.
      expect((await get(host, `/countries/?${query}`)).status).toBe(response.status);
    }
  });

  it('accepts a search of 2 and of 100 characters', async () => {
    expect((await list(host, '/cities/?search=ab&limit=1')).count).toBeGreaterThan(0);
    expect((await list(host, `/cities/?search=${'a'.repeat(100)}`)).count).toBe(0);
  });
});
