// First-start seeder: the bundled countries and cities, imported once into an empty database.
import type { FastifyBaseLogger } from 'fastify';
import type { AppContext } from '../context.js';
import { geoDataMissing, importReferenceData } from './import.js';

export async function seedReferenceData(context: AppContext, logger: FastifyBaseLogger): Promise<void> {
  if (!(await geoDataMissing(context.db))) return;
  const summary = await importReferenceData(context.db);
  logger.info(
    { countries: summary.countries.inserted, cities: summary.cities.inserted, ms: summary.ms },
    'reference data imported (countries and cities from GeoNames, CC-BY 4.0)',
  );
}
