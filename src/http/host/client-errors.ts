// Requests refused before a route could answer them, in the host's body: a request line or URL
// Node or the router cannot read, headers too large, a request too slow; and the lingering read of
// a refused body, so that its client sees the answer.
import { STATUS_CODES } from 'node:http';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import { AppError, ErrorCode } from '../../errors.js';
import { setEveryAnswerHeaders } from './answer-headers.js';
import type { HostApp } from './host-app.js';

/**
 * The host's documented error body for a request refused before it could be routed: the
 * request's target says which part of the host it was meant for.
 */
export type RefusalBody = (error: AppError, target: string) => unknown;

/** The target of a request's first line (`GET /path?query HTTP/1.1`), from the bytes a client error kept. */
function requestTargetOf(rawPacket: unknown): string {
  if (!Buffer.isBuffer(rawPacket)) return '';
  const line = rawPacket
    .subarray(0, rawPacket.indexOf(0x0a) === -1 ? 1024 : rawPacket.indexOf(0x0a))
    .toString('latin1');
  return line.split(' ')[1] ?? '';
}

/** The AppError for a connection Node refused before Fastify saw a request (`clientError`). */
function clientFailure(code: string | undefined): AppError {
  if (code === 'HPE_HEADER_OVERFLOW') return new AppError(ErrorCode.HEADERS_TOO_LARGE);
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return new AppError(ErrorCode.REQUEST_TIMEOUT);
  return new AppError(ErrorCode.MALFORMED_REQUEST);
}

/**
 * The most of a refused body (too large, not JSON...) read and discarded so that its client can
 * finish sending and read the answer. Node's request timeout bounds the time it may take.
 */
const REFUSED_BODY_DRAIN_BYTES = 64 * 1024 * 1024;

/** A refused body's client may pause this long between chunks; then it is answered and the connection closed. */
const REFUSED_BODY_IDLE_MS = 5000;

/**
 * A body refused before it was read (too large, not JSON, no credential...) is answered at once,
 * and Node then closes the socket as soon as the answer is written (Fastify asks for it; a request
 * with `Connection: close` asked for it itself): a client still sending gets EPIPE, and often never
 * reads the answer. Like nginx's lingering close, the rest of the body is read and discarded first,
 * and the answer goes (`done`) once it has ended, whatever the request asked; a keep-alive
 * connection stays usable. Past the bound, or when the body stops coming for a while, the answer
 * goes at once and the connection is closed.
 */
function lingerForRefusedBody(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
  const raw = request.raw;
  // Read to its end already (by the body parser), or never anything more to come.
  const ended = raw.complete || raw.readableEnded;
  if (ended || Number(raw.headers['content-length'] ?? 0) > REFUSED_BODY_DRAIN_BYTES) {
    done();
    return;
  }
  reply.removeHeader('connection');
  let drained = 0;
  const answer = (close: boolean) => {
    clearTimeout(idle);
    raw.off('data', onData).off('end', onEnd).off('close', onAbort);
    if (close) reply.header('connection', 'close');
    done();
  };
  const idle = setTimeout(() => answer(true), REFUSED_BODY_IDLE_MS);
  const onData = (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > REFUSED_BODY_DRAIN_BYTES) answer(true);
    else idle.refresh();
  };
  const onEnd = () => answer(false);
  const onAbort = () => answer(true);
  raw.on('data', onData).once('end', onEnd).once('close', onAbort);
  raw.resume();
}

/** A refused body's connection stays usable: see `lingerForRefusedBody`. */
export function lingerForRefusedBodies(app: HostApp): void {
  app.addHook('onError', (request, reply, _error, done) => lingerForRefusedBody(request, reply, done));
}

/** A path that is not valid percent-encoding (`%ZZ`): refused in the host's body, not Fastify's. */
export const malformedUrlRefusal =
  (refusalBody: RefusalBody): FastifyServerOptions['frameworkErrors'] =>
  (_error, request, reply) => {
    const error = new AppError(ErrorCode.MALFORMED_REQUEST);
    setEveryAnswerHeaders(reply as FastifyReply, request.id)
      .code(error.statusCode)
      .send(refusalBody(error, request.raw.url ?? ''));
  };

/**
 * Headers too large, a request line Node cannot parse, a request too slow: answered in the host's
 * body, then the connection is closed, as Node does.
 */
export const clientErrorRefusal =
  (logger: FastifyBaseLogger, refusalBody: RefusalBody): FastifyServerOptions['clientErrorHandler'] =>
  (failure: NodeJS.ErrnoException & { rawPacket?: unknown }, socket) => {
    if (failure.code === 'ECONNRESET' || socket.destroyed) return;
    logger.trace({ err: failure }, 'client error');
    const error = clientFailure(failure.code);
    const body = JSON.stringify(refusalBody(error, requestTargetOf(failure.rawPacket)));
    if (socket.writable) {
      socket.write(
        `HTTP/1.1 ${error.statusCode} ${STATUS_CODES[error.statusCode]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy();
  };
