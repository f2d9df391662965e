// The country and city listings: ordered (by the name in the language asked for), filtered, paged. `offset` must be cheap even at 100,000
// and `count` must not rescan 125k rows per page, so each filter's full order is computed once per
// geo data version (one index-only scan, kept as a single string of fixed-width ids, a few bytes
// a city) and a page is then a slice of it plus a primary-key fetch of `limit` rows. (The
// hosts keep the pages themselves, as response bytes: src/http/response-cache.ts.) A change
// through the admin API or an import raises the version (data-version.ts), which every process
// reads (at most a second old), so a cached order never outlives its data by more than that.
import { inArray, type SQL, sql } from 'drizzle-orm';
import type { CacheOptions, Caches } from '../cache.js';
import type { Executor } from '../db/client.js';
import { type CityRow, type CountryRow, cities, countries } from '../db/schema.js';
import type { Language } from '../languages.js';

export interface Page {
  limit: number;
  offset: number;
}

export interface CountryFilter {
  /** Only the country of this ISO 3166-1 alpha-2 code (upper case). */
  code?: string;
  /** Only countries whose English or Arabic name contains this, whatever case and accents. */
  search?: string;
}

export interface CityFilter {
  /** Only cities of this country (UUID). */
  country?: string;
  /** Only supported cities with at least one attraction. */
  withAttractions?: boolean;
  /** Only cities whose English or Arabic name contains this, whatever case and accents. */
  search?: string;
}

interface Listing<Row> {
  count: number;
  rows: Row[];
}

const UUID_LENGTH = 36;
const STRIDE = UUID_LENGTH + 1; // each id and its comma

/** All ids of one filter, in list order, as `id,id,...` (every id is 36 characters). */
class OrderedIds {
  constructor(private readonly joined: string) {}

  /** One byte per character: ids and commas are ASCII. */
  get bytes(): number {
    return this.joined.length;
  }

  get count(): number {
    return this.joined === '' ? 0 : (this.joined.length + 1) / STRIDE;
  }

  slice({ limit, offset }: Page): string[] {
    const ids: string[] = [];
    for (let index = offset; index < Math.min(offset + limit, this.count); index++) {
      ids.push(this.joined.slice(index * STRIDE, index * STRIDE + UUID_LENGTH));
    }
    return ids;
  }
}

/**
 * Orders kept at once, in bytes: in each language, every city once in the all-cities order, once
 * more across the per-country orders, and the small supported-with-attractions and search ones.
 * Least recently used go first, so arbitrary `country` or `search` values cannot pile up, nor the
 * orders of versions gone by.
 */
const MAX_ORDER_BYTES = 24 * 1024 * 1024;

const ORDERS: CacheOptions<OrderedIds> = {
  name: 'listing_orders',
  ttlMs: Number.POSITIVE_INFINITY,
  maxBytes: MAX_ORDER_BYTES,
  sizeOf: (order) => order.bytes,
  keyedByVersion: true,
};

/** The order of `filterKey` at `version` (one loaded after a change may be newer, never older). */
const orderOf = (caches: Caches, filterKey: string, version: number, load: () => Promise<OrderedIds>) =>
  caches.cache(ORDERS).get(`${filterKey}@${version}`, load);

type PlaceTable = typeof countries | typeof cities;

/**
 * The list order in `language` (DECISIONS §11): by the English name then id; in Arabic by the
 * Arabic name then id, and the places without one (shown by their English name) after them, by
 * that name then id.
 */
const ORDER_BY: Record<Language, SQL> = {
  en: sql`name, id`,
  ar: sql`name_ar, case when name_ar is null then name end, id`,
};

/** The ordered ids of `table` under `where`. */
async function loadOrder(db: Executor, table: PlaceTable, where: SQL, language: Language): Promise<OrderedIds> {
  const [row] = await db
    .select({ ids: sql<string | null>`string_agg(id::text, ',' order by ${ORDER_BY[language]})` })
    .from(table)
    .where(where);
  return new OrderedIds(row.ids ?? '');
}

/**
 * Places whose English or Arabic name contains `search` once both are reduced to their search keys
 * (`place_name_key`: case, accents and Arabic spelling variants folded; migrations/0021). The
 * pieces every match must hold pick the candidates from the names' GIN indexes; only those are
 * compared in full.
 */
function nameContains(table: PlaceTable, search: string): SQL {
  const inName = (column: typeof table.name | typeof table.nameAr) =>
    sql`strpos(place_name_key(${column}), place_name_key(${search})) > 0`;
  const mayContain = (column: typeof table.name | typeof table.nameAr) =>
    sql`place_name_grams(${column}) @> place_search_grams(${search})`;
  return sql`(${mayContain(table.name)} or ${mayContain(table.nameAr)}) and (${inName(table.name)} or ${inName(table.nameAr)})`;
}

async function pageOf<Row extends { id: string }>(
  db: Executor,
  table: typeof countries | typeof cities,
  order: OrderedIds,
  page: Page,
): Promise<Listing<Row>> {
  const ids = order.slice(page);
  if (ids.length === 0) return { count: order.count, rows: [] };
  const found = (await db.select().from(table).where(inArray(table.id, ids))) as Row[];
  const byId = new Map(found.map((row) => [row.id, row]));
  // A row deleted since the order was computed is simply left out of this page.
  return { count: order.count, rows: ids.flatMap((id) => byId.get(id) ?? []) };
}

/** Countries by name in `language`. `version` is the current geo data version (readGeoDataVersion). */
export async function listCountries(
  db: Executor,
  caches: Caches,
  version: number,
  filter: CountryFilter,
  language: Language,
  page: Page,
): Promise<Listing<CountryRow>> {
  const conditions: SQL[] = [sql`true`];
  if (filter.code !== undefined) conditions.push(sql`${countries.code} = ${filter.code}`);
  if (filter.search !== undefined) conditions.push(nameContains(countries, filter.search));
  const key = `countries|${language}|${JSON.stringify([filter.code, filter.search])}`;
  const order = await orderOf(caches, key, version, () =>
    loadOrder(db, countries, sql.join(conditions, sql` and `), language),
  );
  return pageOf<CountryRow>(db, countries, order, page);
}

/** Cities by name in `language`, then id. */
export async function listCities(
  db: Executor,
  caches: Caches,
  version: number,
  filter: CityFilter,
  language: Language,
  page: Page,
): Promise<Listing<CityRow>> {
  const conditions: SQL[] = [sql`true`];
  if (filter.country !== undefined) conditions.push(sql`${cities.countryId} = ${filter.country}`);
  if (filter.withAttractions) {
    conditions.push(
      sql`${cities.supported} and exists (select 1 from attractions where attractions.city_id = ${cities.id})`,
    );
  }
  if (filter.search !== undefined) conditions.push(nameContains(cities, filter.search));
  const key = `cities|${language}|${JSON.stringify([filter.country, filter.withAttractions === true, filter.search])}`;
  const order = await orderOf(caches, key, version, () =>
    loadOrder(db, cities, sql.join(conditions, sql` and `), language),
  );
  return pageOf<CityRow>(db, cities, order, page);
}
