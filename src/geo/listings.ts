// The country and city listings: ordered, filtered, paged. `offset` must be cheap even at 100,000
// and `count` must not rescan 125k rows per page, so each filter's full order is computed once per
// geo data version (one index-only scan, kept as a single string of fixed-width ids, a few bytes
// a city) and a page is then a slice of it plus a primary-key fetch of `limit` rows. (The
// hosts keep the pages themselves, as response bytes: src/http/response-cache.ts.) A change
// through the admin API or an import raises the version (data-version.ts), which every process
// reads (at most a second old), so a cached order never outlives its data by more than that.
import { inArray, type SQL, sql } from 'drizzle-orm';
import type { CacheOptions, Caches } from '../cache.js';
import { type Executor, rowsOf } from '../db/client.js';
import { type CityRow, type CountryRow, cities, countries } from '../db/schema.js';

export interface Page {
  limit: number;
  offset: number;
}

export interface CityFilter {
  /** Only cities of this country (UUID). */
  country?: string;
  /** Only supported cities with at least one attraction. */
  withAttractions?: boolean;
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
 * Orders kept at once, in bytes: every city once in the all-cities order, once more across
 * the per-country orders, and the small supported-with-attractions ones. Least recently used go first,
 * so arbitrary `country` values cannot pile up, nor the orders of versions gone by.
 */
const MAX_ORDER_BYTES = 12 * 1024 * 1024;

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

/** The ordered ids of `table` under `where`. */
async function loadOrder(db: Executor, table: typeof countries | typeof cities, where: SQL): Promise<OrderedIds> {
  const [row] = rowsOf<{ ids: string | null }>(
    await db.execute(sql`select string_agg(id::text, ',' order by name, id) as ids from ${table} where ${where}`),
  );
  return new OrderedIds(row.ids ?? '');
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

/** Countries by name. `version` is the current geo data version (readGeoDataVersion). */
export async function listCountries(
  db: Executor,
  caches: Caches,
  version: number,
  page: Page,
): Promise<Listing<CountryRow>> {
  const order = await orderOf(caches, 'countries', version, () => loadOrder(db, countries, sql`true`));
  return pageOf<CountryRow>(db, countries, order, page);
}

/** Cities by name, then id. */
export async function listCities(
  db: Executor,
  caches: Caches,
  version: number,
  filter: CityFilter,
  page: Page,
): Promise<Listing<CityRow>> {
  const conditions: SQL[] = [sql`true`];
  if (filter.country !== undefined) conditions.push(sql`${cities.countryId} = ${filter.country}`);
  if (filter.withAttractions) {
    conditions.push(
      sql`${cities.supported} and exists (select 1 from attractions where attractions.city_id = ${cities.id})`,
    );
  }
  const key = `cities|${filter.country ?? ''}|${filter.withAttractions ? 'attractions' : ''}`;
  const order = await orderOf(caches, key, version, () => loadOrder(db, cities, sql.join(conditions, sql` and `)));
  return pageOf<CityRow>(db, cities, order, page);
}
