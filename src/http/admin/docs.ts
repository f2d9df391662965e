// Swagger UI at `/admin/docs` on the admin listener only (the public hosts serve no UI, just their
// documents): the integrations, backend and admin documents, chosen from the top bar. "Try it out"
// on a public host's document goes through `/admin/docs/try/<host>/...` on this listener, which
// relays the call to that host: the page's origin is the admin listener, and the public hosts
// answer browsers from other origins no CORS (DECISIONS §3).
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ErrorCode } from '../../errors.js';

const DOCS_PREFIX = '/admin/docs';

/** Builds a public host's OpenAPI document (the wiring knows the hosts; the admin host does not). */
export type DocumentBuilder = () => Promise<unknown>;

export type PublicHostName = 'integrations' | 'backend';

interface OpenApiDocument {
  servers?: { url: string; description?: string }[];
  [field: string]: unknown;
}

export interface AdminDocsOptions {
  documents: Record<PublicHostName, DocumentBuilder>;
  /** Where each public host is reached (its public URL), read at each call. */
  hostUrl: (host: PublicHostName) => string;
}

const HOSTS: { host: PublicHostName; title: string }[] = [
  { host: 'integrations', title: 'Integrations host (/api/v1)' },
  { host: 'backend', title: 'Backend host (/v1)' },
];

/** Request headers a call to a public host may need; anything else stays here. */
const FORWARDED_REQUEST_HEADERS = [
  'accept',
  'accept-language',
  'authorization',
  'content-type',
  'if-none-match',
  'x-api-key',
  'x-request-id',
];
const FORWARDED_RESPONSE_HEADERS = [
  'allow',
  'content-language',
  'content-type',
  'etag',
  'retry-after',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'www-authenticate',
  'x-request-id',
];

const tryItPrefix = (host: PublicHostName) => `${DOCS_PREFIX}/try/${host}`;

/** The document as the UI shows it: calls go through this listener first, the host's own URL second. */
function forTheUi(document: OpenApiDocument, host: PublicHostName) {
  return {
    ...document,
    servers: [
      { url: tryItPrefix(host), description: 'Through the admin listener (what "Try it out" can reach from here)' },
      ...(document.servers ?? []),
    ],
  };
}

/** Relays one "Try it out" call to the public host, as received (the body untouched). */
async function relay(target: string, request: FastifyRequest, reply: FastifyReply) {
  const base = new URL(target);
  const path = (request.params as { '*': string })['*'];
  const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
  const url = new URL(`${base.origin}/${path}${query}`);
  const headers = Object.fromEntries(
    FORWARDED_REQUEST_HEADERS.flatMap((name) => {
      const value = request.headers[name];
      return typeof value === 'string' ? [[name, value]] : [];
    }),
  );
  const hasBody = request.method !== 'GET' && request.method !== 'HEAD' && Buffer.isBuffer(request.body);
  let response: Response;
  try {
    response = await fetch(url, {
      method: request.method,
      headers,
      body: hasBody ? new Uint8Array(request.body as Buffer) : undefined,
    });
  } catch {
    throw new AppError(ErrorCode.BAD_GATEWAY, `The host at ${base.origin} cannot be reached.`);
  }
  for (const name of FORWARDED_RESPONSE_HEADERS) {
    const value = response.headers.get(name);
    if (value !== null) reply.header(name, value);
  }
  return reply.code(response.status).send(Buffer.from(await response.arrayBuffer()));
}

export const adminDocs: FastifyPluginAsync<AdminDocsOptions> = async (app, { documents, hostUrl }) => {
  // Built on the first visit, not at start: start-up and memory are for the partner-facing hosts.
  const built = new Map<PublicHostName, Promise<OpenApiDocument>>();
  const documentFor = (host: PublicHostName) => {
    let document = built.get(host);
    if (!document) {
      document = documents[host]().then((value) => forTheUi(value as OpenApiDocument, host));
      document.catch(() => built.delete(host));
      built.set(host, document);
    }
    return document;
  };
  let integrations: OpenApiDocument | undefined;
  app.addHook('onRequest', async (request) => {
    if (request.url.startsWith(`${DOCS_PREFIX}/json`)) integrations = await documentFor('integrations');
  });

  await app.register(swaggerUi, {
    routePrefix: DOCS_PREFIX,
    // A Content-Security-Policy for the UI's own page and assets (hashes of its inline scripts),
    // without upgrade-insecure-requests: the admin listener is plain http on loopback by default.
    staticCSP: true,
    transformStaticCSP: (header) => header.replace(/\s*upgrade-insecure-requests;?/, ''),
    // `/admin/docs/json` serves the integrations host's document rather than the admin's.
    transformSpecification: () => integrations as Record<string, unknown>,
    transformSpecificationClone: false,
    uiConfig: {
      urls: [
        ...HOSTS.map(({ host, title }) => ({ url: `${DOCS_PREFIX}/${host}.json`, name: title })),
        { url: '/admin/v1/openapi.json', name: 'Admin API (/admin/v1)' },
      ],
      'urls.primaryName': HOSTS[0].title,
    } as Record<string, unknown>,
  });

  for (const { host } of HOSTS) {
    app.get(`${DOCS_PREFIX}/${host}.json`, { schema: { hide: true } }, () => documentFor(host));
    await app.register(async (relayScope) => {
      // The body is relayed as the bytes received: a callback's `100.10` must stay `100.10`.
      relayScope.removeAllContentTypeParsers();
      relayScope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
      relayScope.all(`${tryItPrefix(host)}/*`, { schema: { hide: true } }, (request, reply) =>
        relay(hostUrl(host), request, reply),
      );
    });
  }
};
