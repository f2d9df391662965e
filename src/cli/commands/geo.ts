// partnerctl commands for countries, cities, attractions, and the reference data import.
import { loadConfig } from '../../config.js';
import type { ImportSummary } from '../../geo/index.js';
import { type Command, type Invocation, positional, required } from '../command.js';
import { type Row, record, table } from '../output.js';

const CITY_COLUMNS = ['id', 'name', 'name_ar', 'country_code', 'capital', 'population', 'supported', 'attractions'];

const supportFlag = (invocation: Invocation) => ({ supported: invocation.options.off !== true });

function importText(summary: ImportSummary): string {
  const line = (what: string, counts: ImportSummary['countries']) =>
    `${what}: ${counts.inserted} added, ${counts.updated} updated, ${counts.unchanged} unchanged`;
  return [
    line('countries', summary.countries),
    line('cities', summary.cities),
    ...(summary.skippedCities ? [`cities skipped (unknown country): ${summary.skippedCities}`] : []),
    `took ${summary.ms} ms`,
  ].join('\n');
}

export const geoCommands: Command[] = [
  {
    name: 'countries support',
    summary: 'Mark a country supported (or not, with --off)',
    usage: 'CODE|COUNTRY_ID [--off]',
    options: { off: { type: 'boolean' } },
    async run(invocation) {
      const id = positional(invocation, 0, 'country code or id');
      const { country } = await invocation
        .admin()
        .request<{ country: Row }>('PATCH', `/countries/${encodeURIComponent(id)}`, supportFlag(invocation));
      invocation.output(record(country), { country });
    },
  },
  {
    name: 'cities support',
    summary: 'Mark a city supported (or not, with --off)',
    usage: 'CITY_ID [--off]',
    options: { off: { type: 'boolean' } },
    async run(invocation) {
      const id = positional(invocation, 0, 'city id');
      const { city } = await invocation
        .admin()
        .request<{ city: Row }>('PATCH', `/cities/${encodeURIComponent(id)}`, supportFlag(invocation));
      invocation.output(record(city), { city });
    },
  },
  {
    name: 'cities find',
    summary: 'Find cities by (part of) their English or Arabic name, most populous first',
    usage: 'NAME [--country CODE]',
    options: { country: { type: 'string' } },
    async run(invocation) {
      const query = new URLSearchParams({ name: positional(invocation, 0, 'name') });
      if (typeof invocation.options.country === 'string') query.set('country', invocation.options.country);
      const { cities } = await invocation.admin().request<{ cities: Row[] }>('GET', `/cities?${query}`);
      invocation.output(cities.length ? table(cities, CITY_COLUMNS) : 'no matching city', { cities });
    },
  },
  {
    name: 'attractions add',
    summary: 'Add an attraction to a city',
    usage: 'CITY_ID --name NAME',
    options: { name: { type: 'string' } },
    async run(invocation) {
      const id = positional(invocation, 0, 'city id');
      const { attraction } = await invocation
        .admin()
        .request<{ attraction: Row }>('POST', `/cities/${encodeURIComponent(id)}/attractions`, {
          name: required(invocation.options, 'name'),
        });
      invocation.output(record(attraction), { attraction });
    },
  },
  {
    name: 'data import',
    summary: "Import (or refresh) the bundled countries and cities into the database; keeps operators' settings",
    async run(invocation) {
      // Loaded here, not at the top: the other commands start without the service's dependencies.
      const { openContext } = await import('../../server.js');
      const { migrateDatabase } = await import('../../db/migrate.js');
      const { importReferenceData } = await import('../../geo/index.js');
      const context = await openContext(loadConfig());
      let summary: ImportSummary | undefined;
      try {
        // Under the schema lock, after any pending migration: never beside a starting service's seeding.
        await migrateDatabase(context.database, async () => {
          summary = await importReferenceData(context.db, context.caches);
        });
      } finally {
        await context.database.close();
      }
      invocation.output(importText(summary!), summary);
    },
  },
];
