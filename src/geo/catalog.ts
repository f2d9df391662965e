// Operators' changes to countries, cities and attractions (admin API, DECISIONS §8). Each change
// raises the geo data version in its own transaction, so every listing sees it on its next request.
import { and, desc, eq, ilike, sql } from 'drizzle-orm';
import type { Caches } from '../cache.js';
import type { Database, Executor } from '../db/client.js';
import { isUniqueViolation } from '../db/errors.js';
import type { AttractionRow, CityRow, CountryRow } from '../db/schema.js';
import { attractions, cities, countries } from '../db/schema.js';
import { conflict, invalidField, notFound } from '../errors.js';
import { containsPattern, isUuid } from '../text.js';
import { bumpGeoDataVersion } from './data-version.js';
import type { CityCapital } from './reference-data.js';

export interface NewCountry {
  code: string;
  name: string;
  name_ar?: string | null;
  phone_code: string;
  supported?: boolean;
}
export type CountryChanges = Partial<Omit<NewCountry, 'code'>>;

export interface GeoPoint {
  type: 'Point';
  coordinates: [number, number];
}

export interface NewCity {
  name: string;
  name_ar?: string | null;
  country: string;
  coordinates: GeoPoint;
  capital?: CityCapital;
  images?: string[];
  supported?: boolean;
}
export type CityChanges = Partial<NewCity>;

/** A country by UUID or by its two-letter code (either case). */
export async function getCountry(db: Executor, idOrCode: string): Promise<CountryRow> {
  const condition = isUuid(idOrCode) ? eq(countries.id, idOrCode) : eq(countries.code, idOrCode.toUpperCase());
  const [row] = await db.select().from(countries).where(condition);
  if (!row) throw notFound('Country');
  return row;
}

export async function getCity(db: Executor, id: string): Promise<CityRow> {
  const [row] = await db.select().from(cities).where(eq(cities.id, id));
  if (!row) throw notFound('City');
  return row;
}

/** Runs a geo change and raises the data version in the same transaction. */
function change<T>(db: Database, caches: Caches, task: (tx: Executor) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    const result = await task(tx);
    await bumpGeoDataVersion(tx, caches);
    return result;
  });
}

export const countryCodeTaken = (code: string) => `A country with code ${code} already exists.`;
const duplicateCode = (code: string) => conflict(countryCodeTaken(code));

export async function createCountry(db: Database, caches: Caches, input: NewCountry): Promise<CountryRow> {
  try {
    return await change(db, caches, async (tx) => {
      const [row] = await tx
        .insert(countries)
        .values({
          code: input.code,
          name: input.name,
          nameAr: input.name_ar ?? null,
          phoneCode: input.phone_code,
          supported: input.supported ?? false,
        })
        .returning();
      return row;
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw duplicateCode(input.code);
    throw error;
  }
}

export async function updateCountry(
  db: Database,
  caches: Caches,
  idOrCode: string,
  input: CountryChanges,
): Promise<CountryRow> {
  return change(db, caches, async (tx) => {
    const existing = await getCountry(tx, idOrCode);
    const [row] = await tx
      .update(countries)
      .set({
        ...(input.name !== undefined && { name: input.name }),
        ...(input.name_ar !== undefined && { nameAr: input.name_ar }),
        ...(input.phone_code !== undefined && { phoneCode: input.phone_code }),
        ...(input.supported !== undefined && { supported: input.supported }),
        updatedAt: sql`now()`,
      })
      .where(eq(countries.id, existing.id))
      .returning();
    return row;
  });
}

async function checkCountry(tx: Executor, id: string): Promise<void> {
  const [found] = await tx.select({ id: countries.id }).from(countries).where(eq(countries.id, id));
  if (!found) throw invalidField('country', 'no such country');
}

export async function createCity(db: Database, caches: Caches, input: NewCity): Promise<CityRow> {
  return change(db, caches, async (tx) => {
    await checkCountry(tx, input.country);
    const [longitude, latitude] = input.coordinates.coordinates;
    const [row] = await tx
      .insert(cities)
      .values({
        name: input.name,
        nameAr: input.name_ar ?? null,
        countryId: input.country,
        longitude,
        latitude,
        capital: input.capital ?? '',
        images: input.images ?? [],
        supported: input.supported ?? false,
      })
      .returning();
    return row;
  });
}

export async function updateCity(db: Database, caches: Caches, id: string, input: CityChanges): Promise<CityRow> {
  return change(db, caches, async (tx) => {
    await getCity(tx, id);
    if (input.country !== undefined) await checkCountry(tx, input.country);
    const [row] = await tx
      .update(cities)
      .set({
        ...(input.name !== undefined && { name: input.name }),
        ...(input.name_ar !== undefined && { nameAr: input.name_ar }),
        ...(input.country !== undefined && { countryId: input.country }),
        ...(input.coordinates !== undefined && {
          longitude: input.coordinates.coordinates[0],
          latitude: input.coordinates.coordinates[1],
        }),
        ...(input.capital !== undefined && { capital: input.capital }),
        ...(input.images !== undefined && { images: input.images }),
        ...(input.supported !== undefined && { supported: input.supported }),
        updatedAt: sql`now()`,
      })
      .where(eq(cities.id, id))
      .returning();
    return row;
  });
}

export async function addAttraction(
  db: Database,
  caches: Caches,
  cityId: string,
  name: string,
): Promise<AttractionRow> {
  return change(db, caches, async (tx) => {
    await getCity(tx, cityId);
    const [row] = await tx.insert(attractions).values({ cityId, name }).returning();
    return row;
  });
}

export async function listAttractions(db: Executor, cityId: string): Promise<AttractionRow[]> {
  await getCity(db, cityId);
  return db
    .select()
    .from(attractions)
    .where(eq(attractions.cityId, cityId))
    .orderBy(attractions.createdAt, attractions.id);
}

export interface CityMatch {
  city: CityRow;
  countryCode: string;
  attractions: number;
}

/** Cities whose English or Arabic name contains `name` (case-insensitive), most populous first. */
export async function findCities(
  db: Executor,
  query: { name: string; country?: string },
  limit = 50,
): Promise<CityMatch[]> {
  const pattern = containsPattern(query.name);
  const country = query.country === undefined ? undefined : await getCountry(db, query.country);
  const rows = await db
    .select({
      city: cities,
      countryCode: countries.code,
      attractions: sql<number>`(select count(*) from attractions where attractions.city_id = ${cities.id})`.mapWith(
        Number,
      ),
    })
    .from(cities)
    .innerJoin(countries, eq(countries.id, cities.countryId))
    .where(
      and(
        sql`(${ilike(cities.name, pattern)} or ${ilike(cities.nameAr, pattern)})`,
        country ? eq(cities.countryId, country.id) : undefined,
      ),
    )
    .orderBy(desc(cities.population), cities.name, cities.id)
    .limit(limit);
  return rows;
}

/**
 * Countries whose English or Arabic name or code contains `search`, supported ones first, then by
 * name; without a search, the supported ones only.
 */
export async function findCountries(db: Executor, search?: string): Promise<CountryRow[]> {
  const pattern = search && containsPattern(search);
  return db
    .select()
    .from(countries)
    .where(
      pattern
        ? sql`(${ilike(countries.name, pattern)} or ${ilike(countries.nameAr, pattern)} or ${ilike(countries.code, pattern)})`
        : eq(countries.supported, true),
    )
    .orderBy(desc(countries.supported), countries.name);
}
