// The ceiling of the listings: a bare Fastify server, in its own process, whose routes answer the
// bytes captured from the real service, with the same content type: no auth, no database, no log.
//   bare.ts <routes.json> <port>   routes.json: [{ path, contentType, bodyBase64 }]
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

const routes = JSON.parse(readFileSync(process.argv[2], 'utf8')) as {
  path: string;
  contentType: string;
  bodyBase64: string;
}[];
const app = Fastify({ logger: false });
for (const route of routes) {
  const body = Buffer.from(route.bodyBase64, 'base64');
  app.get(route.path, (_request, reply) => reply.type(route.contentType).send(body));
}
await app.listen({ host: '127.0.0.1', port: Number(process.argv[3]) });
for (const signal of ['SIGTERM', 'SIGINT'] as const)
  process.on(signal, () => void app.close().then(() => process.exit(0)));
