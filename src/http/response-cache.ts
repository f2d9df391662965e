// Whole responses of the hot read paths (listing pages, effective prompts) kept as bytes: the body
// as the route's serialiser wrote it once, and its headers. A hit sends them as they are: no query,
// no mapping, no serialiser. Keys name everything the body depends on (a listing's key includes the
// geo data version), and every cached value is dropped on a change (src/cache.ts), so a response
// never outlives its data. Authentication and rate limits still run on every request, before this.
// Bounded in bytes by READ_CACHE_MB.
import type { FastifyReply } from 'fastify';
import { cacheGeneration, ShortLivedCache } from '../cache.js';
import type { AppContext } from '../context.js';

export interface CachedResponse {
  body: Buffer;
  /** Content-Type and the headers the body goes with (ETag, Content-Language, ...). */
  headers: Readonly<Record<string, string>>;
}

/** A cached response as a request that asked for it gets it again (src/http/cached-reads.ts). */
export interface RememberedRead {
  body: Buffer;
  /** Every header but the request's own (request id, rate limits): names and values in turn. */
  head: string[];
  /** The route template, for the metrics. */
  route: string;
  /** The scope a credential needs for it, if any. */
  scope: string | undefined;
}

/** Both kinds share one bound; a remembered read shares its body with its response. */
type Cached = CachedResponse | RememberedRead;
const REMEMBERED_PREFIX = 'read|';

/** Caps the life of an entry should an invalidation notice from another process be lost. */
const RESPONSE_TTL_MS = 60_000;
const MIB = 1024 * 1024;
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

const caches = new WeakMap<AppContext, ShortLivedCache<Cached>>();

function responseCache(context: AppContext): ShortLivedCache<Cached> {
  let cache = caches.get(context);
  if (!cache) {
    cache = new ShortLivedCache<Cached>({
      name: 'responses',
      ttlMs: RESPONSE_TTL_MS,
      maxBytes: context.config.readCacheMb * MIB,
      // Header names and values are short ASCII; counted with the body, the shared one each time.
      sizeOf: (cached) =>
        cached.body.length + 2 * JSON.stringify('head' in cached ? cached.head : cached.headers).length,
    });
    caches.set(context, cache);
  }
  return cache;
}

/** Bytes the cache holds now (tests, metrics). */
export const responseCacheBytes = (context: AppContext) => responseCache(context).bytes;

/**
 * Sends the cached response of `key`, building it first when there is none: `build` gives the
 * payload (serialised here with the route's 200 schema) and its headers. `readAt`: the
 * `cacheGeneration()` from before the caller read anything the key depends on (a data version).
 */
export async function sendCachedResponse(
  context: AppContext,
  reply: FastifyReply,
  key: string,
  build: () => Promise<{ payload: unknown; headers?: Record<string, string> }>,
  readAt = cacheGeneration(),
): Promise<void> {
  const response = (await responseCache(context).get(key, async () => {
    const { payload, headers } = await build();
    return {
      body: Buffer.from(reply.serialize(payload) as string),
      headers: { ...headers, 'content-type': JSON_CONTENT_TYPE },
    };
  })) as CachedResponse;
  reply.headers(response.headers).send(response.body);
  reply.server.cachedReads.remember(reply.request, response, readAt);
}

/** Keeps `read` under `key` (src/http/cached-reads.ts), as current as the data read at `readAt`. */
export function rememberRead(context: AppContext, key: string, read: RememberedRead, readAt: number): void {
  responseCache(context).set(REMEMBERED_PREFIX + key, read, readAt);
}

/** The read remembered under `key`, when current. */
export function peekRememberedRead(context: AppContext, key: string): RememberedRead | undefined {
  return responseCache(context).peek(REMEMBERED_PREFIX + key)?.value as RememberedRead | undefined;
}

/**
 * For a route handler in callback style (it returns nothing, so Fastify does not wait on the
 * reply as it does on an async handler's result): `answering` sends the answer; what it throws
 * goes to the host's error handler.
 */
export function answerWith(reply: FastifyReply, answering: Promise<void>): void {
  answering.catch((error: unknown) => reply.send(error));
}
