// The country and city listings: ordered, filtered, paged. `offset` must be cheap even at 100,000
// and `count` must not rescan 125k rows per page, so each filter's full order is computed once per
// geo data version (one index-only scan, kept as a single string of fixed-width ids: ~4.6 MB for
// all cities) and a page is then a slice of it plus a primary-key fetch of `limit` rows, kept with
// the order so that a page read before costs no query. A change
// through the admin API or an import raises the version (data-version.ts), which every process
// reads (at most a second old), so a cached order never outlives its data by more than that.
import { inArray, type SQL, sql } from 'drizzle-orm';
import { perDatabase, ShortLivedCache } from '../cache.js';
import type { Executor } from '../db/client.js';
import { type CityRow, type CountryRow, cities, countries } from '../db/schema.js';
import { geoDataVersionSubquery } from './data-version.js';
import { rowsOf } from './import.js';

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

/** Pages of one order kept at once: the pages partners actually read (first ones, a few deep). */
const MAX_CACHED_PAGES = 256;

/**
 * All ids of one filter, in list order, as `id,id,...` (every id is 36 characters), and the pages
 * already read from it: both belong to one data version, so neither can be stale.
 */
class OrderedIds {
  readonly pages = new ShortLivedCache<unknown[]>('listing_pages', Number.POSITIVE_INFINITY, MAX_CACHED_PAGES);

  constructor(
    readonly version: number,
    private readonly joined: string,
  ) {}

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

/** Least recently used entries go first; the bound keeps arbitrary `country` values from piling up. */
const MAX_CACHED_ORDERS = 512;

class OrderCache {
  private readonly entries = new Map<string, Promise<OrderedIds>>();

  async get(key: string, version: number, load: () => Promise<OrderedIds>): Promise<OrderedIds> {
    const cached = this.entries.get(key);
    if (cached) {
      this.entries.delete(key);
      this.entries.set(key, cached);
      const order = await cached.catch(() => null);
      if (order && order.version >= version) return order;
    }
    const loading = load();
    this.entries.set(key, loading);
    loading.catch(() => this.entries.delete(key));
    if (this.entries.size > MAX_CACHED_ORDERS) this.entries.delete(this.entries.keys().next().value!);
    return loading;
  }
}

const cacheFor = perDatabase(() => new OrderCache());

/**
 * The ordered ids of `table` under `where`, with the data version read in the same statement (one
 * snapshot), so an order is never filed under a version older than the data it reflects.
 */
async function loadOrder(db: Executor, table: typeof countries | typeof cities, where: SQL): Promise<OrderedIds> {
  const [row] = rowsOf<{ version: number | null; ids: string | null }>(
    await db.execute(sql`
      select ${geoDataVersionSubquery} as version,
             string_agg(id::text, ',' order by name, id) as ids
      from ${table} where ${where}`),
  );
  return new OrderedIds(Number(row.version ?? 0), row.ids ?? '');
}

async function pageOf<Row extends { id: string }>(
  db: Executor,
  table: typeof countries | typeof cities,
  order: OrderedIds,
  page: Page,
): Promise<Listing<Row>> {
  const ids = order.slice(page);
  if (ids.length === 0) return { count: order.count, rows: [] };
  const rows = await order.pages.get(`${page.offset}:${page.limit}`, async () => {
    const found = (await db.select().from(table).where(inArray(table.id, ids))) as Row[];
    const byId = new Map(found.map((row) => [row.id, row]));
    // A row deleted since the order was computed is simply left out of this page.
    return ids.flatMap((id) => byId.get(id) ?? []);
  });
  return { count: order.count, rows: rows as Row[] };
}

/** Countries by name. `version` is the current geo data version (readGeoDataVersion). */
export async function listCountries(db: Executor, version: number, page: Page): Promise<Listing<CountryRow>> {
  const order = await cacheFor(db).get('countries', version, () => loadOrder(db, countries, sql`true`));
  return pageOf<CountryRow>(db, countries, order, page);
}

/** Cities by name, then id. */
export async function listCities(
  db: Executor,
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
  const order = await cacheFor(db).get(key, version, () => loadOrder(db, cities, sql.join(conditions, sql` and `)));
  return pageOf<CityRow>(db, cities, order, page);
}
