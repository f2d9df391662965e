// Admin routes for countries, cities and attractions (DECISIONS §8). Answers carry the API shape of
// spec 2.3/2.4 (English names, flag URL from BACKEND_PUBLIC_URL or the request's host name) plus
// what operators also need to see: `name_ar` and, for cities, `supported`.
import { type Static, Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import type { AttractionRow, CityRow, CountryRow } from '../../db/schema.js';
import {
  addAttraction,
  CITY_CAPITALS,
  countryCodeTaken,
  createCity,
  createCountry,
  findCities,
  getCity,
  getCountry,
  listAttractions,
  updateCity,
  updateCountry,
} from '../../geo/index.js';
import { UUID_PATTERN_SOURCE } from '../../text.js';
import { flagUrlFor } from '../geo-listings.js';
import { route } from '../route.js';
import { IdParams, Nullable, Uuid } from '../schemas.js';
import { City, Country, cityView, countryView } from '../shapes/geo.js';
import { conflictResponse } from './error-responses.js';

const Attraction = Type.Object({ id: Uuid, name: Type.String() });
const attractionView = (row: AttractionRow): Static<typeof Attraction> => ({ id: row.id, name: row.name });

const Name = Type.String({ minLength: 1, maxLength: 200 });
const NameAr = Nullable(
  Type.String({ minLength: 1, maxLength: 200, description: 'Arabic name, shown with Accept-Language: ar' }),
);
const CountryCode = Type.String({ pattern: '^[A-Z]{2}$', description: 'ISO 3166-1 alpha-2, upper case; unique' });
const PhoneCode = Type.String({ pattern: '^\\+[0-9]{1,4}$', description: '+ and 1 to 4 digits, e.g. +966' });
const Point = Type.Object(
  {
    type: Type.Literal('Point'),
    coordinates: Type.Tuple(
      [
        Type.Number({ minimum: -180, maximum: 180, description: 'longitude' }),
        Type.Number({ minimum: -90, maximum: 90, description: 'latitude' }),
      ],
      { description: '[longitude, latitude]' },
    ),
  },
  { additionalProperties: false },
);
const Capital = Type.Union(CITY_CAPITALS.map((capital) => Type.Literal(capital)));
const Images = Type.Array(
  Type.String({ format: 'uri', pattern: '^https?://', maxLength: 2000, description: 'http(s) URL' }),
  { maxItems: 50 },
);

// Request bodies, also what the console's forms are validated against.
export const CountryChangesBody = Type.Object(
  {
    name: Type.Optional(Name),
    name_ar: Type.Optional(NameAr),
    phone_code: Type.Optional(PhoneCode),
    supported: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export const CityChangesBody = Type.Object(
  {
    name: Type.Optional(Name),
    name_ar: Type.Optional(NameAr),
    country: Type.Optional(Uuid),
    coordinates: Type.Optional(Point),
    capital: Type.Optional(Capital),
    images: Type.Optional(Images),
    supported: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export const NewAttractionBody = Type.Object({ name: Name }, { additionalProperties: false });

const AdminCountry = Type.Composite([Country, Type.Object({ name_ar: Nullable(Type.String()) })]);
const AdminCity = Type.Composite([City, Type.Object({ name_ar: Nullable(Type.String()), supported: Type.Boolean() })]);
const CountryIdParams = Type.Object({
  id: Type.String({
    pattern: `^(${UUID_PATTERN_SOURCE}|[A-Za-z]{2})$`,
    description: "The country's id or its two-letter code",
  }),
});

const countryOut = (context: AppContext, row: CountryRow) => ({
  ...countryView(row, 'en', flagUrlFor(context)),
  name_ar: row.nameAr,
});
const cityOut = (row: CityRow) => ({ ...cityView(row, 'en'), name_ar: row.nameAr, supported: row.supported });

export const adminGeoRoutes = [
  route({
    method: 'POST',
    url: '/countries',
    schema: {
      operationId: 'createCountry',
      tags: ['geo'],
      summary: 'Add a country; a code already present is a 409',
      body: Type.Object(
        {
          code: CountryCode,
          name: Name,
          name_ar: Type.Optional(NameAr),
          phone_code: PhoneCode,
          supported: Type.Optional(Type.Boolean()),
        },
        { additionalProperties: false },
      ),
      response: {
        409: conflictResponse({ 'code taken': countryCodeTaken('SA') }),
        201: Type.Object({ country: AdminCountry }),
      },
    },
    handler: (context) => async (request, reply) =>
      reply
        .code(201)
        .send({ country: countryOut(context, await createCountry(context.db, context.caches, request.body)) }),
  }),

  route({
    method: 'GET',
    url: '/countries/:id',
    config: { resource: 'Country' },
    schema: {
      operationId: 'getCountry',
      summary: 'A country by id or two-letter code, with its Arabic name',
      tags: ['geo'],
      params: CountryIdParams,
      response: { 200: Type.Object({ country: AdminCountry }) },
    },
    handler: (context) => async (request) => ({
      country: countryOut(context, await getCountry(context.db, request.params.id)),
    }),
  }),

  route({
    method: 'PATCH',
    url: '/countries/:id',
    config: { resource: 'Country' },
    schema: {
      operationId: 'updateCountry',
      tags: ['geo'],
      summary: 'Change a country (by id or code), e.g. mark it supported',
      params: CountryIdParams,
      body: CountryChangesBody,
      response: {
        409: conflictResponse({ 'code taken': countryCodeTaken('SA') }),
        200: Type.Object({ country: AdminCountry }),
      },
    },
    handler: (context) => async (request) => ({
      country: countryOut(context, await updateCountry(context.db, context.caches, request.params.id, request.body)),
    }),
  }),

  route({
    method: 'GET',
    url: '/cities',
    schema: {
      operationId: 'findCities',
      tags: ['geo'],
      summary: 'Find cities by name (English or Arabic, substring), most populous first; at most 50',
      querystring: Type.Object({
        name: Type.String({ minLength: 1, maxLength: 200 }),
        country: Type.Optional(Type.String({ description: 'Country id or two-letter code' })),
      }),
      response: {
        200: Type.Object({
          cities: Type.Array(
            Type.Composite([
              AdminCity,
              Type.Object({ country_code: Type.String(), population: Type.Integer(), attractions: Type.Integer() }),
            ]),
          ),
        }),
      },
    },
    handler: (context) => async (request) => ({
      cities: (await findCities(context.db, request.query)).map((match) => ({
        ...cityOut(match.city),
        country_code: match.countryCode,
        population: match.city.population,
        attractions: match.attractions,
      })),
    }),
  }),

  route({
    method: 'POST',
    url: '/cities',
    schema: {
      operationId: 'createCity',
      tags: ['geo'],
      summary: 'Add a city',
      body: Type.Object(
        {
          name: Name,
          name_ar: Type.Optional(NameAr),
          country: Uuid,
          coordinates: Point,
          capital: Type.Optional(Capital),
          images: Type.Optional(Images),
          supported: Type.Optional(Type.Boolean()),
        },
        { additionalProperties: false },
      ),
      response: { 201: Type.Object({ city: AdminCity }) },
    },
    handler: (context) => async (request, reply) =>
      reply.code(201).send({ city: cityOut(await createCity(context.db, context.caches, request.body)) }),
  }),

  route({
    method: 'GET',
    url: '/cities/:id',
    config: { resource: 'City' },
    schema: {
      operationId: 'getCity',
      summary: 'A city, with its Arabic name and whether it is supported',
      tags: ['geo'],
      params: IdParams,
      response: { 200: Type.Object({ city: AdminCity }) },
    },
    handler: (context) => async (request) => ({ city: cityOut(await getCity(context.db, request.params.id)) }),
  }),

  route({
    method: 'PATCH',
    url: '/cities/:id',
    config: { resource: 'City' },
    schema: {
      operationId: 'updateCity',
      tags: ['geo'],
      summary: 'Change a city, e.g. supported or images',
      params: IdParams,
      body: CityChangesBody,
      response: { 200: Type.Object({ city: AdminCity }) },
    },
    handler: (context) => async (request) => ({
      city: cityOut(await updateCity(context.db, context.caches, request.params.id, request.body)),
    }),
  }),

  route({
    method: 'GET',
    url: '/cities/:id/attractions',
    config: { resource: 'City' },
    schema: {
      operationId: 'listAttractions',
      summary: "A city's attractions",

      tags: ['geo'],
      params: IdParams,
      response: { 200: Type.Object({ attractions: Type.Array(Attraction) }) },
    },
    handler: (context) => async (request) => ({
      attractions: (await listAttractions(context.db, request.params.id)).map(attractionView),
    }),
  }),

  route({
    method: 'POST',
    url: '/cities/:id/attractions',
    config: { resource: 'City' },
    schema: {
      operationId: 'addAttraction',
      tags: ['geo'],
      summary: 'Add an attraction to a city (a supported city with one is listed by has_attractions=true)',
      params: IdParams,
      body: NewAttractionBody,
      response: { 201: Type.Object({ attraction: Attraction }) },
    },
    handler: (context) => async (request, reply) =>
      reply.code(201).send({
        attraction: attractionView(
          await addAttraction(context.db, context.caches, request.params.id, request.body.name),
        ),
      }),
  }),
];
