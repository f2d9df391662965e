// Geo: find cities by English or Arabic name, mark them supported, add attractions; countries
// supported on or off.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { addAttraction, findCities, findCountries, updateCity, updateCountry } from '../../../../geo/index.js';
import { IdParams } from '../../../schemas.js';
import { CityChangesBody, CountryChangesBody, NewAttractionBody } from '../../geo.js';
import { type Html, html } from '../html.js';
import { badge, consoleUrl, page, postForm, table, type View } from '../layout.js';
import { answer, backTo, type ConsoleDependencies, sendPage, text } from '../respond.js';

const supportedBadge = (supported: boolean) => (supported ? badge('supported', 'ok') : badge('not supported', 'off'));

/** A button flipping `supported`, posting to `path`. */
function supportToggle(view: View, path: string, supported: boolean): Html {
  return postForm(
    view,
    path,
    html`<input type="hidden" name="supported" value="${String(!supported)}"><button class="small${supported ? ' danger' : ''}">${
      supported ? 'Unsupport' : 'Mark supported'
    }</button>`,
    { className: 'inline' },
  );
}

const tabs = (current: 'cities' | 'countries') =>
  html`<nav class="tabs"><a href="${consoleUrl('/geo')}"${current === 'cities' ? html` aria-current="page"` : ''}>Cities</a><a href="${consoleUrl('/geo/countries')}"${
    current === 'countries' ? html` aria-current="page"` : ''
  }>Countries</a></nav>`;

const SearchQuery = Type.Object({
  q: Type.Optional(Type.String({ maxLength: 200 })),
  country: Type.Optional(Type.String({ maxLength: 36 })),
});
const supportNotice = (place: { name: string; supported: boolean }) =>
  `${place.name} is ${place.supported ? 'now supported' : 'no longer supported'}.`;
const supportedForm = (fields: Record<string, string | string[]>) => ({
  supported: text(fields, 'supported') === 'true',
});

export const geoRoutes: FastifyPluginAsyncTypebox<ConsoleDependencies> = async (app, { context }) => {
  const { db, caches } = context;
  const hide = true;

  app.get('/geo', { schema: { hide, querystring: SearchQuery } }, async (request, reply) => {
    const view = request.consoleView;
    const q = request.query.q?.trim() ?? '';
    const country = request.query.country?.trim() || undefined;
    const matches = q ? await findCities(db, { name: q, country }) : [];
    const rows = matches.map(
      ({ city, countryCode, attractions }) =>
        html`<tr><td>${city.name}</td><td lang="ar" dir="rtl">${city.nameAr ?? ''}</td><td>${countryCode}</td><td class="num">${city.population.toLocaleString('en')}</td><td>${supportedBadge(city.supported)} ${supportToggle(view, `/geo/cities/${city.id}/supported`, city.supported)}</td><td class="num">${attractions}</td><td>${postForm(
          view,
          `/geo/cities/${city.id}/attractions`,
          html`<input name="name" required maxlength="200" placeholder="Attraction name" aria-label="Attraction name for ${city.name}"><button class="small">Add</button>`,
          { className: 'inline' },
        )}</td></tr>`,
    );
    const content = html`${tabs('cities')}
<form method="get" class="filters" role="search">
<label>City name, English or Arabic <input type="search" name="q" value="${q}" required placeholder="Riyadh or الرياض"></label>
<label>Country code <input name="country" value="${country ?? ''}" maxlength="2" size="3" placeholder="SA"></label>
<button>Find</button></form>
${q ? table(['City', 'Arabic', 'Country', 'Population', 'Supported', 'Attractions', 'Add an attraction'], rows, `No city matches "${q}".`) : html`<p class="muted">Search for a city to see and change it (the 50 most populous matches).</p>`}`;
    return sendPage(reply, page(view, 'geo', 'Geo', content));
  });

  app.get('/geo/countries', { schema: { hide, querystring: SearchQuery } }, async (request, reply) => {
    const view = request.consoleView;
    const q = request.query.q?.trim() ?? '';
    const countries = await findCountries(db, q || undefined);
    const rows = countries.map(
      (country) =>
        html`<tr><td class="mono">${country.code}</td><td>${country.name}</td><td lang="ar" dir="rtl">${country.nameAr ?? ''}</td><td>${country.phoneCode}</td><td>${supportedBadge(country.supported)} ${supportToggle(view, `/geo/countries/${country.id}/supported`, country.supported)}</td></tr>`,
    );
    const content = html`${tabs('countries')}
<form method="get" class="filters" role="search">
<label>Country name or code <input type="search" name="q" value="${q}" placeholder="Saudi Arabia, السعودية or SA"></label>
<button>Find</button></form>
${q ? '' : html`<p class="hint">Supported countries; search to find the others.</p>`}
${table(['Code', 'Name', 'Arabic', 'Phone', 'Supported'], rows, q ? `No country matches "${q}".` : 'No country is supported yet.')}`;
    return sendPage(reply, page(view, 'geo', 'Geo', content));
  });

  app.post(
    '/geo/countries/:id/supported',
    { schema: { hide, params: IdParams, body: CountryChangesBody }, config: { consoleForm: supportedForm } },
    async (request, reply) => {
      const country = await updateCountry(db, caches, request.params.id, request.body);
      return answer(reply, {
        redirect: backTo(request.consoleFields, '/geo/countries'),
        notice: supportNotice(country),
      });
    },
  );

  app.post(
    '/geo/cities/:id/supported',
    { schema: { hide, params: IdParams, body: CityChangesBody }, config: { consoleForm: supportedForm } },
    async (request, reply) => {
      const city = await updateCity(db, caches, request.params.id, request.body);
      return answer(reply, {
        redirect: backTo(request.consoleFields, '/geo'),
        notice: supportNotice(city),
      });
    },
  );

  app.post(
    '/geo/cities/:id/attractions',
    {
      schema: { hide, params: IdParams, body: NewAttractionBody },
      config: { consoleForm: (fields) => ({ name: text(fields, 'name') }) },
    },
    async (request, reply) => {
      const attraction = await addAttraction(db, caches, request.params.id, request.body.name);
      return answer(reply, {
        redirect: backTo(request.consoleFields, '/geo'),
        notice: `Attraction "${attraction.name}" added.`,
      });
    },
  );
};
