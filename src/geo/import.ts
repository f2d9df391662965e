// Loads the bundled reference data (reference-data/) into countries and cities: in bulk, as JSON
// batches expanded by `json_to_recordset` on the server, so 125k cities take seconds on both
// drivers. An upsert by country code / GeoNames id refreshes the reference fields only: `supported`,
// `images` and attractions are the operators' and are never touched. Re-running changes nothing
// when the files did not change (rows that are already equal are not even rewritten).
import type { Caches } from '../cache.js';
import { type Database, type Executor, runIn } from '../db/client.js';
import { type Statement, statement } from '../db/statements.js';
import { bumpGeoDataVersion } from './data-version.js';
import { loadReferenceCities, loadReferenceCountries, type ReferenceCity } from './reference-data.js';

/** Rows per statement: large enough to amortise round trips, small enough to keep each statement's memory low. */
const CITY_BATCH_SIZE = 10_000;

interface ImportCounts {
  inserted: number;
  updated: number;
  unchanged: number;
}

export interface ImportSummary {
  countries: ImportCounts;
  cities: ImportCounts;
  /** Cities skipped because their country is not in the database (never with the bundled data). */
  skippedCities: number;
  ms: number;
}

type UpsertCounts = Statement<[rows: string], { inserted: string; updated: string }>;

/**
 * An upsert of the JSON array $1 whose rows return `inserted`, counted: how many rows it inserted,
 * and how many it updated. `xmax = 0` tells a fresh insert from an update of an existing row.
 */
const countedUpsert = (upsert: string): UpsertCounts =>
  statement(`
    with upserted as (${upsert} returning (xmax = 0) as inserted)
    select count(*) filter (where inserted) as inserted, count(*) filter (where not inserted) as updated from upserted`);

const UPSERT_COUNTRIES = countedUpsert(`
  insert into countries (code, name, name_ar, phone_code)
  select code, name, name_ar, phone_code
  from json_to_recordset($1::json) as r(code text, name text, name_ar text, phone_code text)
  on conflict (code) do update
    set name = excluded.name, name_ar = excluded.name_ar, phone_code = excluded.phone_code, updated_at = now()
    where (countries.name, countries.name_ar, countries.phone_code)
      is distinct from (excluded.name, excluded.name_ar, excluded.phone_code)`);

const UPSERT_CITIES = countedUpsert(`
  insert into cities (geonames_id, country_id, name, name_ar, longitude, latitude, capital, population)
  select r.geonames_id, countries.id, r.name, r.name_ar, r.longitude, r.latitude, r.capital, r.population
  from json_to_recordset($1::json) as r(
    geonames_id integer, name text, name_ar text, country_code text,
    longitude double precision, latitude double precision, capital text, population integer)
  join countries on countries.code = r.country_code
  on conflict (geonames_id) do update
    set country_id = excluded.country_id, name = excluded.name, name_ar = excluded.name_ar,
        longitude = excluded.longitude, latitude = excluded.latitude, capital = excluded.capital,
        population = excluded.population, updated_at = now()
    where (cities.country_id, cities.name, cities.name_ar, cities.longitude, cities.latitude, cities.capital, cities.population)
      is distinct from
      (excluded.country_id, excluded.name, excluded.name_ar, excluded.longitude, excluded.latitude, excluded.capital, excluded.population)`);

const GEO_DATA_PRESENT = statement<[], { present: boolean }>('select exists (select 1 from countries) as present');

async function countUpserts(
  tx: Executor,
  upsert: UpsertCounts,
  rows: object[],
): Promise<{ inserted: number; updated: number }> {
  const [row] = await runIn(tx)(upsert, [JSON.stringify(rows)]);
  return { inserted: Number(row.inserted), updated: Number(row.updated) };
}

export async function importReferenceData(db: Database, caches: Caches): Promise<ImportSummary> {
  const started = performance.now();
  const [referenceCountries, referenceCities] = await Promise.all([loadReferenceCountries(), loadReferenceCities()]);
  return db.transaction(async (tx) => {
    const countryRows = referenceCountries.map((country) => ({
      code: country.code,
      name: country.name,
      name_ar: country.nameAr,
      phone_code: country.phoneCode,
    }));
    const countries = await countUpserts(tx, UPSERT_COUNTRIES, countryRows);

    const cities = { inserted: 0, updated: 0 };
    for (let start = 0; start < referenceCities.length; start += CITY_BATCH_SIZE) {
      const batch = referenceCities.slice(start, start + CITY_BATCH_SIZE);
      const counts = await countUpserts(tx, UPSERT_CITIES, cityRows(batch));
      cities.inserted += counts.inserted;
      cities.updated += counts.updated;
    }
    if (countries.inserted + countries.updated + cities.inserted + cities.updated > 0)
      await bumpGeoDataVersion(tx, caches);
    const countryCodes = new Set(referenceCountries.map((country) => country.code));
    const skippedCities = referenceCities.filter((city) => !countryCodes.has(city.countryCode)).length;
    return {
      countries: { ...countries, unchanged: referenceCountries.length - countries.inserted - countries.updated },
      cities: { ...cities, unchanged: referenceCities.length - skippedCities - cities.inserted - cities.updated },
      skippedCities,
      ms: Math.round(performance.now() - started),
    };
  });
}

function cityRows(batch: ReferenceCity[]) {
  return batch.map((city) => ({
    geonames_id: city.geonamesId,
    name: city.name,
    name_ar: city.nameAr,
    country_code: city.countryCode,
    longitude: city.longitude,
    latitude: city.latitude,
    capital: city.capital,
    population: city.population,
  }));
}

/** Whether the countries table is empty: the first-start seeder imports only then. */
export async function geoDataMissing(db: Executor): Promise<boolean> {
  const [row] = await runIn(db)(GEO_DATA_PRESENT, []);
  return !row.present;
}
