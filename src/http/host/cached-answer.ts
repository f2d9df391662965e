// The cached answer: a repeated read answered from the response cache (src/http/response-cache.ts)
// inside the host's one pipeline.
import type { onRequestHookHandler } from 'fastify';
import type { AppContext } from '../../context.js';
import { cachedResponseOf } from '../response-cache.js';

/**
 * An onRequest hook, added after the host's authenticator (which set the audience and counted the
 * request), that answers a GET whose response the route cached for the same audience, with the
 * same bytes and headers, before its query is validated or its handler runs. Anything else goes on
 * to the route: a conditional GET (the route answers 304), a HEAD, a response not cached now.
 */
export function answerFromCache(context: AppContext): onRequestHookHandler {
  return (request, reply, done) => {
    const response =
      request.method === 'GET' && request.headers['if-none-match'] === undefined
        ? cachedResponseOf(context, request)
        : undefined;
    if (response) reply.headers(response.headers).send(response.body);
    else done();
  };
}
