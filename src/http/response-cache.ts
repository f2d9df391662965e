// Whole responses of the hot read paths (listing pages, effective prompts) kept as bytes: the body
// as the route's serialiser wrote it once, and its headers, under one key per response. A hit sends
// them as they are, in the same tick: no query, no mapping, no serialiser. The key is what the
// request has that the body depends on (`responseKey`), so that a repeated request is answered by
// `answerFromCache` (src/http/host/cached-answer.ts), a hook of the host's pipeline, before its
// query is validated or its handler runs; every cached value is dropped on a change (src/cache.ts), so a response never outlives its
// data. The host's authentication and rate limits run on every request. Bounded in bytes by
// READ_CACHE_MB.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CacheOptions } from '../cache.js';
import type { AppContext } from '../context.js';

interface CachedResponse {
  body: Buffer;
  /** Content-Type and the headers the body goes with (ETag, Content-Language, ...). */
  headers: Readonly<Record<string, string>>;
}

/**
 * The key of a request's cached response: the listener, the audience of the credential (see
 * `CredentialCheck.audienceOf`), the raw URL and Accept-Language. The cached routes' bodies depend
 * on nothing else but data, whose changes empty the cache.
 */
const responseKey = (request: FastifyRequest): string =>
  `${request.server.listener}|${request.audience}|${request.raw.url ?? ''}|${request.headers['accept-language'] ?? ''}`;

/** Caps the life of an entry should an invalidation notice from another process be lost. */
const RESPONSE_TTL_MS = 60_000;
const MIB = 1024 * 1024;
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** The response cache of a context's caches, bounded by its READ_CACHE_MB. */
function responseCache(context: AppContext) {
  return context.caches.cache(responseCacheOptions(context.config.readCacheMb));
}

const responseCacheOptions = (megabytes: number): CacheOptions<CachedResponse> => ({
  name: 'responses',
  ttlMs: RESPONSE_TTL_MS,
  maxBytes: megabytes * MIB,
  // Header names and values are short ASCII; counted with the body.
  sizeOf: (cached) => cached.body.length + 2 * JSON.stringify(cached.headers).length,
});

/** Bytes the cache holds now (tests, metrics). */
export const responseCacheBytes = (context: AppContext) => responseCache(context).bytes;

/** The cached response of the request when there is one now; nothing is loaded. */
export const cachedResponseOf = (context: AppContext, request: FastifyRequest): CachedResponse | undefined =>
  responseCache(context).peek(responseKey(request));

/**
 * Sends the cached response of the request, building it first when there is none: `build` gives
 * the payload (serialised here with the route's 200 schema) and its headers. For a route handler in
 * callback style (it returns nothing): what fails goes to the host's error handler.
 */
export function sendCachedResponse(
  context: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  build: () => Promise<{ payload: unknown; headers?: Record<string, string> }>,
): void {
  const response = responseCache(context).get(responseKey(request), async () => {
    const { payload, headers } = await build();
    return {
      body: Buffer.from(reply.serialize(payload) as string),
      headers: { ...headers, 'content-type': JSON_CONTENT_TYPE },
    };
  });
  const send = ({ headers, body }: CachedResponse) => reply.headers(headers).send(body);
  if (response instanceof Promise) response.then(send, (error: unknown) => reply.send(error));
  else send(response);
}
