// Limit/offset paging shared by every paged list (DECISIONS §5): the query schema, the clamping,
// the list schema `{count, next, previous, results}` and its absolute `next`/`previous` links.
import { type TSchema, Type } from '@sinclair/typebox';
import type { Page } from '../geo/index.js';
import { Nullable } from './schemas.js';

const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 100;

export const PagingQuery = {
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      description: `Items to return; default ${DEFAULT_LIMIT}, larger values are clamped to ${MAX_LIMIT}`,
    }),
  ),
  offset: Type.Optional(Type.Integer({ minimum: 0, description: 'Items to skip; default 0' })),
};

/**
 * The page a query asks for. The host refuses integers past 64 bits; an offset past what a
 * JavaScript number holds exactly is past the end of any list, so it is read as the largest one
 * that is exact (a 64-bit offset rounded up by the number would overflow the database's bigint).
 */
export function pageFrom(query: { limit?: number; offset?: number }): Page {
  return {
    limit: Math.min(query.limit ?? DEFAULT_LIMIT, MAX_LIMIT),
    offset: Math.min(query.offset ?? 0, Number.MAX_SAFE_INTEGER),
  };
}

export const PagedList = <T extends TSchema>(item: T) =>
  Type.Object({
    count: Type.Integer({ description: 'Number of all matching items' }),
    next: Nullable(
      Type.String({ format: 'uri', description: 'The next page, with the same filters; null on the last' }),
    ),
    previous: Nullable(Type.String({ format: 'uri', description: 'The previous page; null on the first' })),
    results: Type.Array(item),
  });

export interface PagedListBody<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

/**
 * The path of a request's target, whatever its form: a request line may carry an absolute URL
 * (`GET http://evil.example/api/v1/countries/`), whose scheme and host must not reach a link.
 */
export function requestPath(url: string): string {
  return new URL(url, 'http://localhost').pathname;
}

/**
 * The paged list with absolute links on the host's public URL (`origin`): the request's `path`, the
 * applied `filters` (already in canonical form), then `limit` and `offset`.
 */
export function pagedList<T>(
  origin: string,
  path: string,
  filters: Record<string, string>,
  page: Page,
  count: number,
  results: T[],
): PagedListBody<T> {
  const base = `${origin}${path}`;
  const link = (offset: number) => {
    const query = new URLSearchParams({ ...filters, limit: String(page.limit), offset: String(offset) });
    return `${base}?${query}`;
  };
  return {
    count,
    next: page.offset + page.limit < count ? link(page.offset + page.limit) : null,
    previous: page.offset > 0 ? link(Math.max(0, Math.min(page.offset, count) - page.limit)) : null,
    results,
  };
}
