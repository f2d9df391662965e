import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openContext } from '../../src/server.js';
import { useApps } from '../support/apps.js';
import { testEnv } from '../support/env.js';
import { partnerctl } from '../support/process.js';

// The first test closes the apps before it compares the database before and after an import.
const service = useApps(['admin']);
const MECCA = 104515;
const LA_PAZ = 3911925;

interface Snapshot {
  countries: number;
  cities: number;
  attractions: number;
  supportedCountries: string[];
  supportedCities: string[];
  withImages: number;
  updatedAtMax: string;
}

async function snapshot(): Promise<Snapshot> {
  const context = await openContext(loadConfig(testEnv(service.database.target)));
  try {
    const [row] = await context.db.execute<Record<string, unknown>>(sql`
        select (select count(*) from countries)::int as countries,
               (select count(*) from cities)::int as cities,
               (select count(*) from attractions)::int as attractions,
               (select coalesce(array_agg(code order by code), '{}') from countries where supported) as supported_countries,
               (select coalesce(array_agg(id::text order by id), '{}') from cities where supported) as supported_cities,
               (select count(*) from cities where cardinality(images) > 0)::int as with_images,
               (select greatest(max(updated_at), (select max(updated_at) from countries))::text from cities) as updated_at_max`);
    return {
      countries: row.countries as number,
      cities: row.cities as number,
      attractions: row.attractions as number,
      supportedCountries: row.supported_countries as string[],
      supportedCities: row.supported_cities as string[],
      withImages: row.with_images as number,
      updatedAtMax: row.updated_at_max as string,
    };
  } finally {
    await context.database.close();
  }
}

describe('reference data import', () => {
  it('imported all countries and cities on first start; a re-run of partnerctl data import changes nothing', async () => {
    const riyadh = (await service.admin('GET', '/cities?name=Riyadh&country=SA')).json().cities[0];
    expect(riyadh).toMatchObject({
      name: 'Riyadh',
      name_ar: 'الرياض',
      capital: 'primary',
      supported: false,
      images: [],
    });
    await service.admin('PATCH', '/countries/SA', { supported: true });
    await service.admin('PATCH', `/cities/${riyadh.id}`, {
      supported: true,
      images: ['https://example.com/riyadh.jpg'],
    });
    await service.admin('POST', `/cities/${riyadh.id}/attractions`, { name: 'Masmak Fortress' });
    await service.close();

    const before = await snapshot();
    expect(before).toMatchObject({
      countries: 250,
      cities: 125_109,
      attractions: 1,
      supportedCountries: ['SA'],
      supportedCities: [riyadh.id],
      withImages: 1,
    });

    const result = await partnerctl(['data', 'import', '--json'], testEnv(service.database.target));
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      countries: { inserted: 0, updated: 0, unchanged: 250 },
      cities: { inserted: 0, updated: 0, unchanged: 125_109 },
      skippedCities: 0,
    });
    expect(await snapshot()).toEqual(before);
  });

  it("applies new reference data over an older database, keeps operators' settings, and bumps the version once", async () => {
    const run = async (statement: ReturnType<typeof sql>) => {
      const context = await openContext(loadConfig(testEnv(service.database.target)));
      try {
        return await context.db.execute<Record<string, unknown>>(statement);
      } finally {
        await context.database.close();
      }
    };
    // What an older import left: an ISO formal country name, no Arabic name for Mecca, and a
    // second primary city in Bolivia; an operator has since marked Mecca supported.
    await run(sql`update countries set name = 'Taiwan, Province of China' where code = 'TW'`);
    await run(sql`update cities set name_ar = null, supported = true where geonames_id = ${MECCA}`);
    await run(sql`update cities set capital = 'primary' where geonames_id = ${LA_PAZ}`);
    const [{ version: before }] = await run(sql`select version from geo_data_version where id = 1`);

    const result = await partnerctl(['data', 'import', '--json'], testEnv(service.database.target));
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      countries: { inserted: 0, updated: 1 },
      cities: { inserted: 0, updated: 2 },
    });
    const [after] = await run(sql`
      select (select version from geo_data_version where id = 1) as version,
             (select name from countries where code = 'TW') as taiwan,
             (select name_ar from cities where geonames_id = ${MECCA}) as mecca,
             (select supported from cities where geonames_id = ${MECCA}) as mecca_supported,
             (select capital from cities where geonames_id = ${LA_PAZ}) as la_paz,
             (select count(*)::int from attractions) as attractions,
             (select array_agg(code order by code) from countries where supported) as supported_countries`);
    expect(after).toEqual({
      version: Number(before) + 1,
      taiwan: 'Taiwan',
      mecca: 'مكة المكرمة',
      mecca_supported: true,
      la_paz: 'admin',
      attractions: 1,
      supported_countries: ['SA'],
    });
  });
});
