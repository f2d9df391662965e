// The API shapes of a country (spec 2.3) and a city (spec 2.4), in English or Arabic. Both hosts
// and the admin API build them here, so every host returns identical objects.
import type { attractions, cities, countries } from '../db/schema.js';
import type { CityCapital } from './reference-data.js';

export type CountryRow = typeof countries.$inferSelect;
export type CityRow = typeof cities.$inferSelect;
export type AttractionRow = typeof attractions.$inferSelect;

export const LANGUAGES = ['en', 'ar'] as const;
export type Language = (typeof LANGUAGES)[number];

export interface CountryView {
  id: string;
  code: string;
  name: string;
  phone_code: string;
  supported: boolean;
  flag: string;
}

export interface CityView {
  id: string;
  name: string;
  coordinates: { type: 'Point'; coordinates: [number, number] };
  capital: CityCapital;
  images: string[];
  country: string;
}

/** How a host turns a country code into the absolute URL of its flag image. */
export type FlagUrl = (code: string) => string;

/** The Arabic name when Arabic is asked for and one is known; the English name otherwise. */
const localName = (row: { name: string; nameAr: string | null }, language: Language) =>
  language === 'ar' && row.nameAr ? row.nameAr : row.name;

export function countryView(row: CountryRow, language: Language, flagUrl: FlagUrl): CountryView {
  return {
    id: row.id,
    code: row.code,
    name: localName(row, language),
    phone_code: row.phoneCode,
    supported: row.supported,
    flag: flagUrl(row.code),
  };
}

export function cityView(row: CityRow, language: Language): CityView {
  return {
    id: row.id,
    name: localName(row, language),
    coordinates: { type: 'Point', coordinates: [row.longitude, row.latitude] },
    capital: row.capital as CityCapital,
    images: row.images,
    country: row.countryId,
  };
}

export const attractionView = (row: AttractionRow) => ({ id: row.id, name: row.name });
