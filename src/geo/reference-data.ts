/**
 * Loaders for the prepared reference data in `reference-data/` (countries and cities), which the
 * service imports into an empty database on first start. The files are produced by
 * `scripts/prepare-reference-data.ts`; the column list and file names below are shared with it so
 * the writer and the reader cannot drift apart.
 */
import { existsSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { referenceDataDir } from '../paths.js';

export interface ReferenceCountry {
  code: string;
  name: string;
  nameAr: string;
  phoneCode: string;
}

/** A city's capital role: national (`primary`), first-order division (`admin`), lower (`minor`), none. */
export const CITY_CAPITALS = ['', 'primary', 'admin', 'minor'] as const;
export type CityCapital = (typeof CITY_CAPITALS)[number];

export interface ReferenceCity {
  geonamesId: number;
  name: string;
  nameAr: string | null;
  countryCode: string;
  longitude: number;
  latitude: number;
  capital: CityCapital;
  population: number;
}

/** One entry of `countries.json` as stored on disk. */
export interface PreparedCountry {
  code: string;
  name: string;
  name_ar: string;
  phone_code: string;
}

export const COUNTRIES_FILE_NAME = 'countries.json';
export const CITIES_FILE_NAME = 'cities.tsv.gz';

/** Header line (and column order) of the gzipped cities TSV. Names never contain tabs or newlines. */
export const CITY_COLUMNS = [
  'geonames_id',
  'name',
  'name_ar',
  'country_code',
  'longitude',
  'latitude',
  'capital',
  'population',
] as const;

const KNOWN_CAPITALS: ReadonlySet<string> = new Set(CITY_CAPITALS);

const gunzipAsync = promisify(gunzip);

export async function loadReferenceCountries(): Promise<ReferenceCountry[]> {
  const text = await readFile(join(referenceDataDir, COUNTRIES_FILE_NAME), 'utf8');
  const rows = JSON.parse(text) as PreparedCountry[];
  return rows.map((row) => ({
    code: row.code,
    name: row.name,
    nameAr: row.name_ar,
    phoneCode: row.phone_code,
  }));
}

export async function loadReferenceCities(): Promise<ReferenceCity[]> {
  const file = join(referenceDataDir, CITIES_FILE_NAME);
  const text = (await gunzipAsync(await readFile(file))).toString('utf8');
  const lines = text.split('\n');
  if (lines[0] !== CITY_COLUMNS.join('\t')) {
    throw new Error(`${file}: unexpected header; re-run scripts/prepare-reference-data.ts`);
  }
  const cities: ReferenceCity[] = [];
  for (let index = 1; index < lines.length; index++) {
    const line = lines[index];
    if (line === '') continue;
    const fields = line.split('\t');
    const capital = fields[6];
    if (fields.length !== CITY_COLUMNS.length || !KNOWN_CAPITALS.has(capital)) {
      throw new Error(`${file}: malformed row on line ${index + 1}`);
    }
    cities.push({
      geonamesId: Number(fields[0]),
      name: fields[1],
      nameAr: fields[2] === '' ? null : fields[2],
      countryCode: fields[3],
      longitude: Number(fields[4]),
      latitude: Number(fields[5]),
      capital: capital as CityCapital,
      population: Number(fields[7]),
    });
  }
  return cities;
}

const flagsDir = join(dirname(createRequire(import.meta.url).resolve('flag-icons/package.json')), 'flags', '4x3');

/** flag-icons' flag of no country: a country an operator added with a code it has no flag for shows it. */
const UNKNOWN_FLAG_CODE = 'xx';

/**
 * Absolute path of the 4:3 flag SVG shipped by flag-icons for an ISO alpha-2 code, or null when
 * there is none. Only two-letter codes are accepted, so a code taken from a request path can never
 * reach outside the flags directory.
 */
export function flagSvgPath(code: string): string | null {
  if (!/^[A-Za-z]{2}$/.test(code)) return null;
  const path = join(flagsDir, `${code.toLowerCase()}.svg`);
  return existsSync(path) ? path : null;
}

/** Lower-case codes flag-icons has a flag for, read once. */
let flagCodes: Set<string> | undefined;

/**
 * The code whose flag file a country shows: its own, lower case, or flag-icons' unknown flag when
 * there is none (a code an operator added), so that every `flag` URL answers an image.
 */
export function flagFileCode(code: string): string {
  flagCodes ??= new Set(
    readdirSync(flagsDir)
      .filter((file) => file.endsWith('.svg'))
      .map((file) => file.slice(0, -'.svg'.length)),
  );
  const lower = code.toLowerCase();
  return flagCodes.has(lower) ? lower : UNKNOWN_FLAG_CODE;
}
