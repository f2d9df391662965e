// `GET /api/v1/trips/<uuid>/` and the admin routes that create trips (DECISIONS §6, §8).
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { cities, countries } from '../../../src/db/schema.js';
import { useApps, useTenant } from '../../support/apps.js';
import { type ApiRequest, apiAs, expectError, expectOk } from './api.js';

const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

describe('trips', () => {
  const service = useApps(['integrations', 'admin']);
  const owner = useTenant(service);
  let api: ApiRequest;
  const place = { country: '', city: '', otherCountry: '', otherCity: '' };

  async function addCity(countryId: string, name: string): Promise<string> {
    const [city] = await service.context.db
      .insert(cities)
      .values({ countryId, name, longitude: 46.7, latitude: 24.7 })
      .returning({ id: cities.id });
    return city.id;
  }
  async function addCountry(): Promise<string> {
    const code = `Q${randomBytes(2).toString('hex').toUpperCase()}`;
    const [country] = await service.context.db
      .insert(countries)
      .values({ code, name: `Test ${code}`, phoneCode: '+999' })
      .returning({ id: countries.id });
    return country.id;
  }
  const createTrip = async (body: Record<string, unknown>) =>
    service.admin('POST', '/trips', { tenant_id: owner.tenant.id, ...body });

  beforeAll(async () => {
    api = apiAs(service, owner.credentials.sso_hmac_secret);
    place.country = await addCountry();
    place.city = await addCity(place.country, 'Test City');
    place.otherCountry = await addCountry();
    place.otherCity = await addCity(place.otherCountry, 'Elsewhere');
  });

  it('creates a draft trip with defaults and serves it to its tenant in the envelope', async () => {
    const created = await createTrip({ title: '  Weekend away ' });
    expect(created.statusCode).toBe(201);
    const { trip } = created.json();
    expect(Object.keys(trip).sort()).toEqual([
      'created_at',
      'destinations',
      'end_date',
      'id',
      'invoice',
      'itinerary',
      'mode',
      'start_date',
      'status',
      'title',
      'travelers',
      'updated_at',
    ]);
    expect(trip).toMatchObject({
      title: 'Weekend away',
      status: 'draft',
      start_date: null,
      end_date: null,
      travelers: { adults: 1, children: 0 },
      destinations: [],
      itinerary: [],
      invoice: null,
    });
    expect(trip.created_at).toMatch(ISO_WITH_OFFSET);
    expect(trip.mode).toBe('live');
    // Partners see the admin shape without its mode: their credential says it.
    const { mode: _mode, ...partnerShape } = trip;
    const response = await api('GET', `/api/v1/trips/${trip.id}/`);
    expect(expectOk<'getTrip'>(response)).toEqual({ trip: partnerShape });
    expect((await service.admin('GET', `/trips/${trip.id}`)).json()).toEqual({ trip });
  });

  it('keeps dates, travelers, destinations and itinerary as given', async () => {
    const body = {
      title: 'Riyadh and beyond',
      start_date: '2030-03-01',
      end_date: '2030-03-03',
      travelers: { adults: 2, children: 1 },
      destinations: [
        { country: place.country, city: place.city },
        { country: place.otherCountry, city: place.otherCity },
      ],
      itinerary: [
        {
          day: 1,
          date: '2030-03-01',
          city: place.city,
          items: [{ time: '09:30', title: 'Museum', description: 'The national museum' }],
        },
        { day: 3, date: '2030-03-03', city: place.otherCity, items: [] },
      ],
    };
    const created = await createTrip(body);
    expect(created.statusCode).toBe(201);
    const { trip } = created.json();
    const { title, start_date, end_date, travelers, destinations, itinerary } = body;
    expect(trip).toMatchObject({ title, start_date, end_date, travelers, destinations, itinerary, status: 'draft' });
    expect(expectOk<'getTrip'>(await api('GET', `/api/v1/trips/${trip.id}`)).trip).toEqual({
      ...trip,
      mode: undefined,
    });
  });

  it("answers another tenant's trip, an unknown id and a malformed id with a 404", async () => {
    const { trip } = (await createTrip({ title: 'Private' })).json();
    const other = apiAs(service, (await service.createTenant()).credentials.sso_hmac_secret);
    expectError(await other('GET', `/api/v1/trips/${trip.id}/`), 404, 'NOT_FOUND');
    for (const id of [
      '00000000-0000-4000-8000-000000000000',
      'not-a-uuid',
      '123',
      `${trip.id}x`,
      trip.id.slice(1),
      '%20',
    ]) {
      const error = expectError(await api('GET', `/api/v1/trips/${id}/`), 404, 'NOT_FOUND');
      expect(error).toEqual({ code: 'NOT_FOUND' });
    }
    expect((await service.admin('GET', '/trips/00000000-0000-4000-8000-000000000000')).statusCode).toBe(404);
  });

  it('refuses bad trips on the admin API, naming the field', async () => {
    const ok = { title: 'T' };
    const day = (fields: Record<string, unknown>) => ({
      day: 1,
      date: '2030-01-01',
      city: place.city,
      items: [],
      ...fields,
    });
    const cases: [string, Record<string, unknown>, number, string?][] = [
      ['no title', { title: undefined }, 400, 'title'],
      ['blank title', { title: '   ' }, 400, 'title'],
      ['title null', { title: null }, 400, 'title'],
      ['title too long', { title: 'x'.repeat(201) }, 400, 'title'],
      ['NUL in title', { title: 'a\u0000b' }, 400, 'title'],
      ['not a date', { ...ok, start_date: 'tomorrow' }, 400, 'start_date'],
      ['impossible date', { ...ok, start_date: '2030-02-30' }, 400, 'start_date'],
      ['date-time instead of date', { ...ok, end_date: '2030-02-01T00:00:00Z' }, 400, 'end_date'],
      ['end before start', { ...ok, start_date: '2030-02-02', end_date: '2030-02-01' }, 400, 'end_date'],
      ['no adults', { ...ok, travelers: { adults: 0 } }, 400, 'travelers.adults'],
      ['negative children', { ...ok, travelers: { adults: 1, children: -1 } }, 400, 'travelers.children'],
      ['adults as string', { ...ok, travelers: { adults: '2' } }, 400, 'travelers.adults'],
      ['travelers null', { ...ok, travelers: null }, 400, 'travelers'],
      ['travelers unknown field', { ...ok, travelers: { adults: 1, pets: 2 } }, 400, 'travelers.pets'],
      [
        'destinations object',
        { ...ok, destinations: { country: place.country, city: place.city } },
        400,
        'destinations',
      ],
      [
        'destination not a uuid',
        { ...ok, destinations: [{ country: place.country, city: 'riyadh' }] },
        400,
        'destinations.0.city',
      ],
      [
        'unknown city',
        { ...ok, destinations: [{ country: place.country, city: '00000000-0000-4000-8000-000000000000' }] },
        400,
        'destinations.0.city',
      ],
      [
        'city of another country',
        { ...ok, destinations: [{ country: place.country, city: place.otherCity }] },
        400,
        'destinations.0.country',
      ],
      [
        'itinerary day outside the dates',
        { ...ok, start_date: '2030-01-02', itinerary: [day({})] },
        400,
        'itinerary.0.date',
      ],
      [
        'itinerary unknown city',
        { ...ok, itinerary: [day({ city: '00000000-0000-4000-8000-000000000000' })] },
        400,
        'itinerary.0.city',
      ],
      ['itinerary day 0', { ...ok, itinerary: [day({ day: 0 })] }, 400, 'itinerary.0.day'],
      [
        'itinerary bad time',
        { ...ok, itinerary: [day({ items: [{ time: '25:00', title: 'x', description: '' }] })] },
        400,
        'itinerary.0.items.0.time',
      ],
      [
        'itinerary item missing title',
        { ...ok, itinerary: [day({ items: [{ time: '10:00', description: '' }] })] },
        400,
        'itinerary.0.items.0.title',
      ],
      [
        'lone surrogate in description',
        { ...ok, itinerary: [day({ items: [{ time: '10:00', title: 'x', description: '\ud800' }] })] },
        400,
        'itinerary.0.items.0.description',
      ],
      ['unknown field', { ...ok, status: 'booked' }, 400, 'status'],
      ['unknown tenant', { ...ok, tenant_id: '00000000-0000-4000-8000-000000000000' }, 404],
      ['tenant_id not a uuid', { ...ok, tenant_id: 'acme' }, 400, 'tenant_id'],
    ];
    for (const [name, body, status, field] of cases) {
      const response = await createTrip(body);
      expect(response.statusCode, name).toBe(status);
      if (field)
        expect(
          response.json().error.details.map((d: { field: string }) => d.field),
          name,
        ).toContain(field);
    }
  });
});
