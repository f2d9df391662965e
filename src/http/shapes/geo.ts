// A country (spec 2.3) and a city (spec 2.4) in the API shape, in English or Arabic:
// both hosts and the admin API build them here, so every host returns identical objects.
import { type Static, Type } from '@sinclair/typebox';
import type { CityRow, CountryRow } from '../../db/schema.js';
import { CITY_CAPITALS, type CityCapital } from '../../geo/index.js';
import type { Language } from '../../languages.js';
import { Uuid } from '../schemas.js';

// The documents' examples are real rows of the reference data (test/http/docs/examples.test.ts
// compares them with the live answers); only the ids are made up.
const EXAMPLE_COUNTRY_ID = '6b0e2f4a-9c3d-4e1f-8a7b-5d2c0e9f1a3b';

export const Country = Type.Object(
  {
    id: Uuid,
    code: Type.String({ description: 'ISO 3166-1 alpha-2 code' }),
    name: Type.String({ description: 'Arabic with `Accept-Language: ar` (all countries), English otherwise' }),
    phone_code: Type.String({ description: 'International dialing prefix, e.g. +966' }),
    supported: Type.Boolean(),
    flag: Type.String({ format: 'uri', description: 'SVG flag served by the backend host, without auth' }),
  },
  {
    examples: [
      {
        id: EXAMPLE_COUNTRY_ID,
        code: 'SA',
        name: 'Saudi Arabia',
        phone_code: '+966',
        supported: true,
        flag: 'https://geo.example.com/static/flags/sa.svg',
      },
    ],
  },
);

export const City = Type.Object(
  {
    id: Uuid,
    name: Type.String({ description: 'Arabic with `Accept-Language: ar` where known, English otherwise' }),
    coordinates: Type.Object({
      type: Type.Literal('Point'),
      coordinates: Type.Tuple([Type.Number(), Type.Number()], { description: '[longitude, latitude]' }),
    }),
    capital: Type.Unsafe<CityCapital>({
      type: 'string',
      enum: [...CITY_CAPITALS],
      description:
        'primary: national capital; admin: seat of a first-order division; minor: of a lower one; empty: none',
    }),
    images: Type.Array(Type.String({ format: 'uri' })),
    country: Uuid,
  },
  {
    examples: [
      {
        id: '2a7d9c1e-4b6f-4e8a-b3c5-1f0d8e6a9b27',
        name: 'Riyadh',
        coordinates: { type: 'Point', coordinates: [46.72185, 24.68773] },
        capital: 'primary',
        images: [],
        country: EXAMPLE_COUNTRY_ID,
      },
    ],
  },
);

/** How a host turns a country code into the absolute URL of its flag image. */
export type FlagUrl = (code: string) => string;

/** The Arabic name when Arabic is asked for and one is known; the English name otherwise. */
const localName = (row: { name: string; nameAr: string | null }, language: Language) =>
  language === 'ar' && row.nameAr ? row.nameAr : row.name;

export function countryView(row: CountryRow, language: Language, flagUrl: FlagUrl): Static<typeof Country> {
  return {
    id: row.id,
    code: row.code,
    name: localName(row, language),
    phone_code: row.phoneCode,
    supported: row.supported,
    flag: flagUrl(row.code),
  };
}

export function cityView(row: CityRow, language: Language): Static<typeof City> {
  return {
    id: row.id,
    name: localName(row, language),
    coordinates: { type: 'Point', coordinates: [row.longitude, row.latitude] },
    capital: row.capital as CityCapital,
    images: row.images,
    country: row.countryId,
  };
}
