// The admin listener answers only for its own names (DECISIONS §11): a browser page whose DNS name
// an attacker rebound to the listener's address sends that name in `Host`, and gets a 421 instead
// of /metrics, the docs or the console. The probes too: nothing on this listener is for others.
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { AppError, ErrorCode } from '../../errors.js';
import { renderAdminError } from './error-responses.js';

/** `name`, `name:port`, `[v6]` or `[v6]:port`: the name, lowercase; null when the header is no such thing. */
function hostName(header: string | undefined): string | null {
  const match = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::\d{1,5})?$/i.exec(header ?? '');
  return match ? match[1].toLowerCase() : null;
}

/**
 * The host a request is for: the authority of an absolute-form target (`GET http://name/…`), which
 * RFC 9112 puts before `Host`, else its one `Host` header; undefined when it has none, or several.
 */
function requestedHost(request: FastifyRequest): string | undefined {
  const target = request.raw.url ?? '';
  if (/^https?:\/\//i.test(target)) return URL.parse(target)?.host;
  const { rawHeaders } = request.raw;
  let hosts = 0;
  for (let index = 0; index < rawHeaders.length; index += 2) {
    if (rawHeaders[index].toLowerCase() === 'host') hosts++;
  }
  return hosts === 1 ? request.headers.host : undefined;
}

/**
 * An onRequest hook answering 421 in the admin body to a request whose host (requestedHost) names
 * none of `allowed`. The port is not compared: the name is what a rebinding attack changes, and a
 * private proxy may listen on a port of its own.
 */
export function onlyAllowedHosts(allowed: readonly string[]) {
  const names = new Set(allowed);
  return (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void => {
    const name = hostName(requestedHost(request));
    if (name !== null && names.has(name)) {
      done();
      return;
    }
    const error = new AppError(ErrorCode.MISDIRECTED_REQUEST);
    reply.code(error.statusCode).send(renderAdminError(error));
  };
}
