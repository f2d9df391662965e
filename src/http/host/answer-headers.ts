// The request id and the headers every answer of a host carries: the protective ones and
// `X-Request-Id`, set in the host's first onRequest hook.
import { randomUUID } from 'node:crypto';
import type { FastifyReply, RawRequestDefaultExpression } from 'fastify';
import helmet from 'helmet';
import type { HostApp } from './host-app.js';

const REQUEST_ID_HEADER = 'x-request-id';
const REQUEST_ID_PATTERN = /^[\w.:@/+=-]{1,128}$/;

/** An incoming `X-Request-Id` is kept when it is a sane token; otherwise a new one is made. */
export function requestId(raw: RawRequestDefaultExpression): string {
  const incoming = raw.headers[REQUEST_ID_HEADER];
  return typeof incoming === 'string' && REQUEST_ID_PATTERN.test(incoming) ? incoming : randomUUID();
}

/**
 * The usual protective headers (nosniff, frame and referrer policies, ...), as helmet sets them,
 * captured once: they are the same on every answer, so a request gets them in one `reply.headers`,
 * not helmet's middleware setting each on the raw response. JSON needs no Content-Security-Policy
 * (the docs pages set their own); flags are embedded by partners' pages on other origins, so
 * resources stay loadable cross-origin.
 */
const PROTECTIVE_HEADERS: Readonly<Record<string, string>> = (() => {
  const headers: Record<string, string> = {};
  const response = {
    setHeader: (name: string, value: unknown) => {
      headers[name.toLowerCase()] = String(value);
    },
    removeHeader: (name: string) => delete headers[name.toLowerCase()],
  };
  helmet({
    contentSecurityPolicy: false,
    crossOriginEmbedderPolicy: false,
    crossOriginResourcePolicy: { policy: 'cross-origin' },
  })({} as never, response as never, () => {});
  // Copied: helmet's removals left a dictionary-mode object, slow to read at every answer.
  return Object.fromEntries(Object.entries(headers));
})();

/** Sets the headers every answer of a host carries: the protective ones and its request id. */
export const setEveryAnswerHeaders = (reply: FastifyReply, id: string): FastifyReply =>
  reply.headers(PROTECTIVE_HEADERS).header(REQUEST_ID_HEADER, id);

/** Every answer of the host carries them, errors and 404s included. */
export function everyAnswerHeaders(app: HostApp): void {
  // Hooks run on every request take a callback: an async one costs a promise each time.
  app.addHook('onRequest', (request, reply, done) => {
    setEveryAnswerHeaders(reply, request.id);
    done();
  });
}
