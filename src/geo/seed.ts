// First-start seeder: the bundled countries and cities, imported once into an empty database.
import type { Caches } from '../cache.js';
import type { Database } from '../db/client.js';
import type { Logger } from '../logger.js';
import { geoDataMissing, importReferenceData } from './import.js';

export async function seedReferenceData(
  { db, caches }: { db: Database; caches: Caches },
  logger: Logger,
): Promise<void> {
  if (!(await geoDataMissing(db))) return;
  const summary = await importReferenceData(db, caches);
  logger.info(
    { countries: summary.countries.inserted, cities: summary.cities.inserted, ms: summary.ms },
    'reference data imported (countries and cities from GeoNames, CC-BY 4.0)',
  );
}
