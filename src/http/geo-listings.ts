// The countries and cities listings as both hosts serve them (spec 4.1, 4.2, 4.5; DECISIONS §3,
// §5): one query schema, one language negotiation, one ETag, one flag URL rule. A host only adds
// its auth and its wrapping (the backend host none, the integrations host the envelope).
import { hash } from 'node:crypto';
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import {
  type CityFilter,
  type CountryFilter,
  flagFileCode,
  listCities,
  listCountries,
  type Page,
  readGeoDataVersion,
} from '../geo/index.js';
import type { Language } from '../languages.js';
import { type PagedListBody, PagingQuery, pagedList, pageFrom, requestPath } from './paging.js';
import { sendCachedResponse } from './response-cache.js';
import { type City, type Country, cityView, countryView, type FlagUrl } from './shapes/geo.js';

const BOOLEAN_TEXT = ['true', 'false', '1', '0'] as const;

const SearchQuery = {
  search: Type.Optional(
    Type.String({
      minLength: 2,
      maxLength: 100,
      description:
        'Only places whose English or Arabic name contains this (2 to 100 characters), whatever its case and accents: `sao` finds São Paulo, `الرياض` finds الرياض and Riyadh',
    }),
  ),
};

export const CountryQuery = Type.Object({
  ...PagingQuery,
  code: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z]{2}$',
      description: 'Only the country of this ISO 3166-1 alpha-2 code, in any case (`sa`, `SA`)',
    }),
  ),
  ...SearchQuery,
});
export const CityQuery = Type.Object({
  ...PagingQuery,
  ...SearchQuery,
  country: Type.Optional(Type.String({ format: 'uuid', description: 'Only cities of this country (its id)' })),
  has_attractions: Type.Optional(
    Type.Unsafe<(typeof BOOLEAN_TEXT)[number]>({
      type: 'string',
      enum: [...BOOLEAN_TEXT],
      description: 'true or 1: only supported cities with at least one attraction. false or 0: no filter (all cities)',
    }),
  ),
});

/**
 * The language of the response from `Accept-Language`: the acceptable (q > 0) range with the highest
 * q-value among ours, `ar-SA` counting as `ar` and `*` as English; English when none matches.
 */
function negotiateLanguage(header: string | undefined): Language {
  let best: { language: Language; q: number } | null = null;
  for (const part of (header ?? '').split(',')) {
    const [range, ...parameters] = part.trim().split(';');
    const primary = range.trim().toLowerCase().split('-')[0];
    const language: Language | null = primary === 'ar' ? 'ar' : primary === 'en' || primary === '*' ? 'en' : null;
    if (!language) continue;
    const qParameter = parameters.map((parameter) => parameter.trim().toLowerCase()).find((p) => p.startsWith('q='));
    const q = qParameter === undefined ? 1 : Number(qParameter.slice(2));
    if (!Number.isFinite(q) || q <= 0 || q > 1) continue;
    if (!best || q > best.q) best = { language, q };
  }
  return best?.language ?? 'en';
}

/** Flags live on the backend host, at its public URL (never the request's Host header). */
export function flagUrlFor(context: AppContext): FlagUrl {
  const base = context.publicUrls.backend;
  return (code) => `${base}/static/flags/${flagFileCode(code)}.svg`;
}

interface ListingSource<T> {
  /** What the list is, plus the host's wrapping: part of the ETag. */
  variant: string;
  /** The applied filters in canonical form, carried by the links. */
  filters: Record<string, string>;
  fetch(version: number, page: Page, language: Language): Promise<{ count: number; results: T[] }>;
}

function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((candidate) => {
    const tag = candidate.trim();
    return tag === '*' || tag.replace(/^W\//, '') === etag;
  });
}

/**
 * Answers a listing: 304 when `If-None-Match` names the current ETag (no list query is run), else
 * the wrapped paged list, from cached bytes when this page was served since the data last changed.
 * The ETag covers the geo data version and everything else the body depends on (list, filters,
 * page, language, the public URLs of links and flags); the cache key names the request. In callback style:
 * a page cached under a cached version is sent in the same tick.
 */
function serveListing<T, Wrapped>(
  context: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  host: PublicHost,
  source: ListingSource<T>,
  page: Page,
  wrap: (list: PagedListBody<T>) => Wrapped,
): void {
  const answer = (version: number) => {
    const language = negotiateLanguage(request.headers['accept-language']);
    const path = requestPath(request.url);
    const fingerprint = `${source.variant}|${language}|${path}|${JSON.stringify(source.filters)}|${page.limit}|${page.offset}`;
    const etag = () =>
      `"g${version}-${hash('sha256', `${fingerprint}|${context.publicUrls[host]}|${context.publicUrls.backend}`, 'base64url').slice(0, 22)}"`;
    const ifNoneMatch = request.headers['if-none-match'];
    if (ifNoneMatch) {
      const current = etag();
      if (etagMatches(ifNoneMatch, current))
        return void reply.code(304).headers(listingHeaders(language, current)).send();
    }
    sendCachedResponse(context, request, reply, async () => {
      const { count, results } = await source.fetch(version, page, language);
      return {
        payload: wrap(pagedList(context.publicUrls[host], path, source.filters, page, count, results)),
        headers: listingHeaders(language, etag()),
      };
    });
  };
  const version = readGeoDataVersion(context.db, context.caches);
  if (version instanceof Promise) version.then(answer).catch((error: unknown) => reply.send(error));
  else answer(version);
}

/** A listing's answer headers, as its documented 200 and 304 give them. */
const LISTING_HEADERS = {
  'Content-Language': { type: 'string' as const, description: 'The language of the names: `en` or `ar`' },
  Vary: { type: 'string' as const, description: '`Accept-Language`' },
  ETag: { type: 'string' as const, description: 'Send it back in `If-None-Match`: a 304 while the page is unchanged' },
  'Cache-Control': { type: 'string' as const, description: '`private, no-cache`: revalidate with the ETag' },
};

/** The documented answers of a listing whose 200 is `page`: with its headers, and the 304 of a matching ETag. */
export const listingResponses = <T extends TSchema>(page: T) => ({
  200: { ...page, headers: LISTING_HEADERS },
  304: Type.Null({ description: 'Not modified: `If-None-Match` named the current ETag', headers: LISTING_HEADERS }),
});

const listingHeaders = (language: Language, etag: string) => ({
  'content-language': language,
  vary: 'Accept-Language',
  etag,
  'cache-control': 'private, no-cache',
});

/** The host a listing is served on: its links point there. */
type PublicHost = keyof AppContext['publicUrls'];

type CountryQueryType = Static<typeof CountryQuery>;
type CityQueryType = Static<typeof CityQuery>;

export function serveCountries<Wrapped>(
  context: AppContext,
  request: FastifyRequest,
  query: CountryQueryType,
  reply: FastifyReply,
  host: PublicHost,
  wrap: (list: PagedListBody<Static<typeof Country>>) => Wrapped,
): void {
  const flagUrl = flagUrlFor(context);
  const filter: CountryFilter = {
    ...(query.code !== undefined && { code: query.code.toUpperCase() }),
    ...(query.search !== undefined && { search: query.search }),
  };
  serveListing(
    context,
    request,
    reply,
    host,
    {
      variant: `${host}:countries`,
      filters: { ...filter },
      async fetch(version, page, language) {
        const { count, rows } = await listCountries(context.db, context.caches, version, filter, language, page);
        return { count, results: rows.map((row) => countryView(row, language, flagUrl)) };
      },
    },
    pageFrom(query),
    wrap,
  );
}

export function serveCities<Wrapped>(
  context: AppContext,
  request: FastifyRequest,
  query: CityQueryType,
  reply: FastifyReply,
  host: PublicHost,
  wrap: (list: PagedListBody<Static<typeof City>>) => Wrapped,
): void {
  const { country, has_attractions: hasAttractions, search } = query;
  const filter: CityFilter = {
    // Ajv's uuid format also admits a `urn:uuid:` prefix; the database does not.
    ...(country !== undefined && { country: country.replace(/^urn:uuid:/i, '').toLowerCase() }),
    ...(hasAttractions !== undefined && { withAttractions: hasAttractions === 'true' || hasAttractions === '1' }),
    ...(search !== undefined && { search }),
  };
  const filters: Record<string, string> = {
    ...(filter.country !== undefined && { country: filter.country }),
    ...(filter.withAttractions !== undefined && { has_attractions: String(filter.withAttractions) }),
    ...(filter.search !== undefined && { search: filter.search }),
  };
  serveListing(
    context,
    request,
    reply,
    host,
    {
      variant: `${host}:cities`,
      filters,
      async fetch(version, page, language) {
        const { count, rows } = await listCities(context.db, context.caches, version, filter, language, page);
        return { count, results: rows.map((row) => cityView(row, language)) };
      },
    },
    pageFrom(query),
    wrap,
  );
}
