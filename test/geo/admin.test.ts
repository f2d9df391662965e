import type { LightMyRequestResponse } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { useApps } from '../support/apps.js';

const service = useApps(['admin', 'backend']);
let saudiArabiaId: string;

beforeAll(async () => {
  saudiArabiaId = (await service.admin('GET', '/countries/sa')).json().country.id;
});

const point = (lon: number, lat: number) => ({ type: 'Point', coordinates: [lon, lat] });

function expectInvalid(response: LightMyRequestResponse, field: string) {
  expect(response.statusCode).toBe(400);
  const { error } = response.json<{ error: { code: string; details: { field: string }[] } }>();
  expect(error.code).toBe('VALIDATION_ERROR');
  expect(error.details.map((detail) => detail.field)).toContain(field);
}

describe('admin: countries', () => {
  it('creates a country (201, API shape), refuses a duplicate code (409) and changes it', async () => {
    const created = await service.admin('POST', '/countries', {
      code: 'XA',
      name: 'Atlantis',
      phone_code: '+383',
      supported: true,
    });
    expect(created.statusCode).toBe(201);
    const { country } = created.json();
    expect(country).toMatchObject({ code: 'XA', name: 'Atlantis', phone_code: '+383', supported: true });
    // No flag is bundled for XA: the flag of no country, an image all the same.
    expect(country.flag).toMatch(/^http:\/\/.+\/static\/flags\/xx\.svg$/);
    const flag = await service.apps.backend!.inject({ method: 'GET', url: new URL(country.flag).pathname });
    expect(flag.statusCode).toBe(200);
    expect(flag.headers['content-type']).toBe('image/svg+xml');
    expect((await service.admin('GET', '/countries/SA')).json().country.flag).toMatch(/\/static\/flags\/sa\.svg$/);
    const duplicate = await service.admin('POST', '/countries', {
      code: 'XA',
      name: 'Again',
      phone_code: '+383',
      supported: false,
    });
    expect(duplicate.statusCode).toBe(409);
    expect(duplicate.json().error.code).toBe('CONFLICT');
    const changed = await service.admin('PATCH', `/countries/${country.id}`, {
      supported: false,
      name: 'Atlantis Republic',
    });
    expect(changed.json().country).toMatchObject({ id: country.id, supported: false, name: 'Atlantis Republic' });
    expect((await service.admin('PATCH', '/countries/SA', { supported: true })).json().country).toMatchObject({
      id: saudiArabiaId,
      supported: true,
    });
  });

  it.each([
    [{ code: 'xk', name: 'A', phone_code: '+1', supported: true }, 'code'],
    [{ code: 'XKX', name: 'A', phone_code: '+1', supported: true }, 'code'],
    [{ code: 'XY', name: '', phone_code: '+1', supported: true }, 'name'],
    [{ code: 'XY', name: 'A', phone_code: '383', supported: true }, 'phone_code'],
    [{ code: 'XY', name: 'A', phone_code: '+38a', supported: true }, 'phone_code'],
    [{ code: 'XY', name: 'A', phone_code: '+1', supported: 'yes' }, 'supported'],
    [{ code: 'XY', name: 'A', phone_code: '+1', extra: 1 }, 'extra'],
  ])('refuses country %j', async (body, field) => {
    expectInvalid(await service.admin('POST', '/countries', body), field);
  });

  it('404 for an unknown country', async () => {
    expect(
      (await service.admin('PATCH', '/countries/00000000-0000-4000-8000-000000000000', { supported: true })).statusCode,
    ).toBe(404);
    expect((await service.admin('PATCH', '/countries/ZZ', { supported: true })).statusCode).toBe(404);
  });
});

describe('admin: cities and attractions', () => {
  it('creates a city (201, API shape), changes it, adds an attraction and finds it', async () => {
    const created = await service.admin('POST', '/cities', {
      name: 'Neom Bay',
      country: saudiArabiaId,
      coordinates: point(35.29, 27.9),
      capital: '',
      images: ['https://example.com/neom.jpg'],
      supported: false,
    });
    expect(created.statusCode).toBe(201);
    const { city } = created.json();
    expect(city).toMatchObject({
      name: 'Neom Bay',
      country: saudiArabiaId,
      coordinates: { type: 'Point', coordinates: [35.29, 27.9] },
      capital: '',
      images: ['https://example.com/neom.jpg'],
      supported: false,
    });
    const changed = await service.admin('PATCH', `/cities/${city.id}`, { supported: true, images: [] });
    expect(changed.json().city).toMatchObject({ supported: true, images: [] });
    const attraction = await service.admin('POST', `/cities/${city.id}/attractions`, { name: 'Sindalah Island' });
    expect(attraction.statusCode).toBe(201);
    expect(attraction.json()).toEqual({ attraction: { id: expect.any(String), name: 'Sindalah Island' } });
    const found = (await service.admin('GET', '/cities?name=neom%20b&country=SA')).json().cities;
    expect(found).toEqual([
      expect.objectContaining({ id: city.id, country_code: 'SA', attractions: 1, supported: true }),
    ]);
    const arabic = (await service.admin('GET', `/cities?name=${encodeURIComponent('الرياض')}`)).json().cities;
    expect(arabic[0]).toMatchObject({ name: 'Riyadh', capital: 'primary' });
  });

  it.each([
    [{ coordinates: point(181, 0) }, 'coordinates.coordinates.0'],
    [{ coordinates: point(-180.5, 0) }, 'coordinates.coordinates.0'],
    [{ coordinates: point(0, 90.1) }, 'coordinates.coordinates.1'],
    [{ coordinates: point(0, -91) }, 'coordinates.coordinates.1'],
    [{ coordinates: { type: 'Polygon', coordinates: [0, 0] } }, 'coordinates.type'],
    [{ coordinates: { type: 'Point', coordinates: [0] } }, 'coordinates.coordinates'],
    [{ capital: 'national' }, 'capital'],
    [{ images: ['ftp://example.com/a.jpg'] }, 'images.0'],
    [{ images: ['not a url'] }, 'images.0'],
    [{ country: 'SA' }, 'country'],
    [{ name: '' }, 'name'],
  ])('refuses city with %j', async (change, field) => {
    const body = {
      name: 'X',
      country: saudiArabiaId,
      coordinates: point(1, 1),
      capital: '',
      supported: false,
      ...change,
    };
    const response = await service.admin('POST', '/cities', body);
    expectInvalid(response, field);
  });

  it('refuses an unknown country (400) and answers 404 for an unknown city', async () => {
    const body = {
      name: 'X',
      country: '00000000-0000-4000-8000-000000000000',
      coordinates: point(1, 1),
      capital: '',
      supported: false,
    };
    expectInvalid(await service.admin('POST', '/cities', body), 'country');
    const unknown = '00000000-0000-4000-8000-000000000000';
    expect((await service.admin('PATCH', `/cities/${unknown}`, { supported: true })).statusCode).toBe(404);
    expect((await service.admin('POST', `/cities/${unknown}/attractions`, { name: 'A' })).statusCode).toBe(404);
  });
});
