// Which methods a host serves for a path, so that a wrong method is a 405 with `Allow`.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ErrorCode } from '../../errors.js';
import type { HostApp } from './host-app.js';

/**
 * The methods the host serves for a concrete path, so a wrong method can be answered 405 with an
 * `Allow` header instead of Fastify's 404. Collected from the routes as they are registered.
 */
export function trackAllowedMethods(app: HostApp): (path: string) => string[] {
  const routes: { pattern: RegExp; methods: string[] }[] = [];
  app.addHook('onRoute', (route) => {
    const source = route.url
      .replace(/\/+$/, '')
      .split('/')
      .map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('/');
    routes.push({ pattern: new RegExp(`^${source}/?$`), methods: [route.method].flat() });
  });
  return (path) => {
    const pathname = path.split('?')[0];
    return [...new Set(routes.filter((route) => route.pattern.test(pathname)).flatMap((route) => route.methods))];
  };
}

/**
 * For a request no route took: the 405 (its `Allow` header set, `message` in the host's body) when
 * the host serves its path with other methods; nothing when it serves the path with none.
 */
export function refuseOtherMethods(
  allowedMethods: (path: string) => string[],
  request: FastifyRequest,
  reply: FastifyReply,
  message: string,
): void {
  const allowed = allowedMethods(request.url);
  if (allowed.length === 0) return;
  reply.header('allow', allowed.join(', '));
  throw new AppError(ErrorCode.METHOD_NOT_ALLOWED, message);
}
