// Which methods a host serves for a path, so that a wrong method is a 405 with `Allow`.
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
