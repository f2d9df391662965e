// `/api/v1/countries/` and `/api/v1/cities/` (spec 4.1, 4.2; DECISIONS §3): the backend host's
// paged lists, with the same filters and paging, inside the envelope; links point at this host.
import { CityQuery, CountryQuery, listingResponses, serveCities, serveCountries } from '../geo-listings.js';
import { PagedList } from '../paging.js';
import { route } from '../route.js';
import { City, Country } from '../shapes/geo.js';
import { Envelope, ok } from './envelope.js';

export const geoRoutes = [
  route({
    method: 'GET',
    url: '/countries/',
    schema: {
      operationId: 'listCountries',
      tags: ['geo'],
      summary:
        'Countries by name (the Arabic name with `Accept-Language: ar`), by `code` or `search`; `data` is the paged list',
      querystring: CountryQuery,
      response: listingResponses(Envelope(PagedList(Country))),
    },
    handler: (context) => (request, reply) =>
      serveCountries(context, request, request.query, reply, 'integrations', (list) => ok('Countries.', list)),
  }),

  route({
    method: 'GET',
    url: '/cities/',
    schema: {
      operationId: 'listCities',
      tags: ['geo'],
      summary:
        'Cities by name (the Arabic name with `Accept-Language: ar`) then id, by `country` or `search`; `data` is the paged list',
      querystring: CityQuery,
      response: listingResponses(Envelope(PagedList(City))),
    },
    handler: (context) => (request, reply) =>
      serveCities(context, request, request.query, reply, 'integrations', (list) => ok('Cities.', list)),
  }),
];
