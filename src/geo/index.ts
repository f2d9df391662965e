// Countries, cities and attractions: what the rest of the service may use of this domain.
export {
  addAttraction,
  countryCodeTaken,
  createCity,
  createCountry,
  findCities,
  findCountries,
  getCity,
  getCountry,
  listAttractions,
  updateCity,
  updateCountry,
} from './catalog.js';
export { readGeoDataVersion } from './data-version.js';
export { type ImportSummary, importReferenceData } from './import.js';
export { type CityFilter, type CountryFilter, listCities, listCountries, type Page } from './listings.js';
export {
  CITIES_FILE_NAME,
  CITY_CAPITALS,
  CITY_COLUMNS,
  type CityCapital,
  COUNTRIES_FILE_NAME,
  flagFileCode,
  flagSvgPath,
  type PreparedCountry,
} from './reference-data.js';
export { seedReferenceData } from './seed.js';
