// What the three hosts share: logging with a request id, the JSON body parser, health probes and
// the TypeBox type provider. Each host then adds its own auth, error body and routes.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import { AjvCompiler } from '@fastify/ajv-compiler';
import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifySchemaCompiler,
  LogController,
  type RawReplyDefaultExpression,
  type RawRequestDefaultExpression,
  type RawServerDefault,
} from 'fastify';
import helmet from 'helmet';
import type { Logger } from 'pino';
import type { Config, ListenerName } from '../config.js';
import type { AppContext } from '../context.js';
import { AppError, ErrorCode, invalid } from '../errors.js';
import { loggableUrl } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { unacceptableString } from '../text.js';
import { SERVICE_COMMIT, SERVICE_VERSION } from '../version.js';
import type { ReadCredential } from './authentication.js';
import { registerJsonBodyParser } from './json-body.js';
import { type CachedResponse, cachedResponse, responseKey } from './response-cache.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Which listener the host is. */
    listener: ListenerName;
    /** Requests answered before routing so far (see `answerBeforeRouting`). */
    answeredBeforeRouting: number;
  }
}

export type HostApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** `/healthz`: the process is up, and which build it runs. */
const Health = Type.Object({
  status: Type.Literal('ok'),
  version: Type.String({ description: 'The release (semantic version)' }),
  commit: Type.String({
    pattern: '^([0-9a-f]{7,40}|unknown)$',
    description: 'The commit the build was made from, or "unknown" when not built from a git checkout',
  }),
});

/** Request bodies larger than this are refused with 413. */
const BODY_LIMIT_BYTES = 64 * 1024;
export const BODY_LIMIT_TEXT = `${BODY_LIMIT_BYTES / 1024} KiB`;

/**
 * Query strings and path parameters are text, so they are coerced to the schema's types; JSON
 * bodies are not: a body's `null` or `123` where a boolean or a string belongs is a 400, never a
 * silent `false` or `"123"`. Unknown body fields are refused (schemas say additionalProperties:
 * false), never dropped.
 */
// validateSchema: the route schemas are TypeBox's, fixed at build time; checking each against the
// meta-schema at every start was a large part of the start-up time.
const BODY_AJV_OPTIONS = {
  removeAdditional: false,
  coerceTypes: false,
  useDefaults: true,
  allErrors: true,
  validateSchema: false,
} as const;
const TEXT_AJV_OPTIONS = { ...BODY_AJV_OPTIONS, coerceTypes: 'array' } as const;
/** One pool of Ajv instances for every host of the process. */
const buildFromPool = AjvCompiler();

/** Fastify's own serialiser compiler (fast-json-stringify). */
const buildSerializers = SerializerSelector();

/** Each host's compilations not yet done, as `compileAllSchemas` runs them. */
const pendingCompilations = new WeakMap<HostApp, Set<() => unknown>>();

/**
 * Validators and serialisers are compiled when a route first uses them, not at start: every route
 * documents a response for each of its statuses, most of them errors seldom sent, and compiling
 * them all was a large part of the start. The host's shared schemas are added before its routes, so
 * they are there whenever a compilation happens.
 */
function compileOnFirstUse(app: HostApp): void {
  const pending = new Set<() => unknown>();
  pendingCompilations.set(app, pending);
  /** `compile` once, on first call of the function it gives. */
  const onFirstUse = <T>(compile: () => T): (() => T) => {
    let compiled: { value: T } | undefined;
    const get = () => {
      if (!compiled) {
        compiled = { value: compile() };
        pending.delete(get);
      }
      return compiled.value;
    };
    pending.add(get);
    return get;
  };
  app.setValidatorCompiler((route) => {
    const customOptions = route.httpPart === 'body' ? BODY_AJV_OPTIONS : TEXT_AJV_OPTIONS;
    const validator = onFirstUse(
      () =>
        buildFromPool(app.getSchemas() as Parameters<typeof buildFromPool>[0], {
          customOptions: { ...customOptions },
        })(route) as ReturnType<FastifySchemaCompiler<unknown>>,
    );
    const integers = route.httpPart === 'body' ? [] : integerFields(route.schema);
    // Fastify reads a failed validation's `errors` from the function it was given.
    const validate: ReturnType<FastifySchemaCompiler<unknown>> = (data) => {
      const notDecimal = integers.length ? notDecimalInteger(data, integers) : null;
      if (notDecimal) {
        validate.errors = [notDecimal];
        return false;
      }
      const result = validator()(data);
      validate.errors = validator().errors;
      return result;
    };
    return validate;
  });
  app.setSerializerCompiler((route) => {
    const serializer = onFirstUse(() => buildSerializers(app.getSchemas(), {})(route as SerializerCompilerRoute));
    return (data) => serializer()(data);
  });
}

/** The integer-typed properties of a query or path schema. */
function integerFields(schema: unknown): string[] {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> } | undefined)?.properties ?? {};
  return Object.keys(properties).filter((name) => properties[name].type === 'integer');
}

const DECIMAL_INTEGER = /^-?[0-9]+$/;
const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);

/**
 * A query or path integer is written in decimal digits and fits a 64-bit integer. Ajv's coercion
 * reads text as JavaScript does (`0x10`, `1e3`, `1.0`, ` 10`) and takes `1e23` for an integer,
 * which the database then refuses: the error, in Ajv's shape, of the first field so written.
 */
function notDecimalInteger(data: unknown, fields: string[]) {
  const values = data as Record<string, unknown> | null;
  for (const field of fields) {
    const value = values?.[field];
    if (typeof value !== 'string') continue;
    const base = { instancePath: `/${field}`, schemaPath: `#/properties/${field}` };
    if (!DECIMAL_INTEGER.test(value)) {
      return { ...base, keyword: 'type', params: { type: 'integer' }, message: 'must be integer' };
    }
    const integer = BigInt(value);
    if (integer > INT64_MAX) {
      return { ...base, keyword: 'maximum', params: { limit: String(INT64_MAX) }, message: `must be <= ${INT64_MAX}` };
    }
    if (integer < INT64_MIN) {
      return { ...base, keyword: 'minimum', params: { limit: String(INT64_MIN) }, message: `must be >= ${INT64_MIN}` };
    }
  }
  return null;
}

/** Compiles every validator and serialiser of a ready host now: a schema that cannot compile throws here. */
export function compileAllSchemas(app: HostApp): number {
  const pending = [...(pendingCompilations.get(app) ?? [])];
  for (const compile of pending) compile();
  return pending.length;
}

type SerializerCompilerRoute = Parameters<ReturnType<ReturnType<typeof SerializerSelector>>>[0];

const REQUEST_ID_HEADER = 'x-request-id';
const REQUEST_ID_PATTERN = /^[\w.:@/+=-]{1,128}$/;

/** An incoming `X-Request-Id` is kept when it is a sane token; otherwise a new one is made. */
function requestId(raw: RawRequestDefaultExpression): string {
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
const setEveryAnswerHeaders = (reply: FastifyReply, id: string): FastifyReply =>
  reply.headers(PROTECTIVE_HEADERS).header(REQUEST_ID_HEADER, id);

const REQUEST_ID_LOG_LABEL = 'request_id';

/** An answered request, as its log line and metric name it. */
interface CompletedRequest {
  method: string;
  url: string;
  /** The route template, never the URL. */
  route: string;
  status: number;
  ms: number;
  /** The request's logger (made only when its line is written). */
  log(): FastifyBaseLogger;
}

/** A request duration series, labelled once. */
interface DurationSeries {
  observe(seconds: number): void;
}

/**
 * What every answer of a host leaves, written at its completion: one log line (half the log
 * volume of Fastify's default pair) and the duration metric, labelled by route template, never
 * the URL: one series per route whatever the ids in paths.
 */
class RequestCompletion extends LogController {
  private readonly series = new Map<string, Map<string, Map<number, DurationSeries>>>();

  constructor(
    private readonly listener: ListenerName,
    private readonly requestDuration: Metrics['requestDuration'],
    /** The host's logger: each request's logs as a child of it with its `request_id`. */
    private readonly logger: FastifyBaseLogger,
  ) {
    super({ requestIdLogLabel: REQUEST_ID_LOG_LABEL });
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply): void {
    this.completed(
      {
        method: request.method,
        url: request.url,
        route: request.routeOptions.url ?? 'unmatched',
        status: reply.statusCode,
        ms: reply.elapsedTime,
        log: () => reply.log,
      },
      error,
    );
  }

  /** What an answer leaves, whoever gave it: Fastify or the path before routing. */
  completed({ method, url, route, status, ms, log }: CompletedRequest, error: Error | null): void {
    this.durationOf(route, method, status).observe(ms / 1000);
    const level = error ? 'error' : 'info';
    if (!(this.logger as Logger).isLevelEnabled(level)) return;
    const line = { method, url: loggableUrl(url), status, ms: Math.round(ms * 100) / 100 };
    if (error) log().error({ ...line, err: error }, 'request errored');
    else log().info(line, 'request completed');
  }

  // Nested by route, method and status rather than one joined key: no string is built per request.
  private durationOf(route: string, method: string, status: number): DurationSeries {
    let byMethod = this.series.get(route);
    if (!byMethod) {
      byMethod = new Map();
      this.series.set(route, byMethod);
    }
    let byStatus = byMethod.get(method);
    if (!byStatus) {
      byStatus = new Map();
      byMethod.set(method, byStatus);
    }
    let series = byStatus.get(status);
    if (!series) {
      series = this.requestDuration.labels({ listener: this.listener, route, method, status });
      byStatus.set(status, series);
    }
    return series;
  }
}

interface HostOptions {
  /** Which listener this is, in every log line. */
  listener: ListenerName;
  logger: FastifyBaseLogger;
  /**
   * The host's documented error body for a request refused before it could be routed (a malformed
   * URL or request line, headers too large, too slow): the request's target says which part of the
   * host it was meant for.
   */
  refusalBody(error: AppError, target: string): unknown;
  /** For a host with cached reads: the credential of an Authorization header, from the credential cache. */
  cachedReadCredential?: (connection: object, authorization: string | undefined) => ReadCredential | null;
}

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

/**
 * Node checks the header and request timeouts on this period (30 s by default), so a slowloris
 * connection would otherwise outlive its timeout by up to that much.
 */
const TIMEOUT_CHECK_INTERVAL_MS = 1000;

/** Fastify's `trustProxy` for ours: a hop count as proxy-addr's function (Fastify's types take no number). */
function fastifyTrustProxy(trustProxy: Config['trustProxy']) {
  return trustProxy === 1 ? (_address: string, hop: number) => hop < 1 : trustProxy;
}

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

/** What the path before routing needs of its host. */
interface BeforeRouting {
  context: AppContext;
  listener: ListenerName;
  logger: FastifyBaseLogger;
  completion: RequestCompletion;
  credentialOf: (connection: object, authorization: string | undefined) => ReadCredential | null;
  /** A closing server leaves its answer (503, Connection: close) to Fastify. */
  listening(): boolean;
  /** Counts an answer given here. */
  answered(): void;
}

/**
 * A repeated cached read, answered in the server's request listener before Fastify routes it, by
 * the same functions as Fastify's path: the host's credential check (only when the credential
 * cache has the credential now), the response cache entry the route stored under the same key,
 * the host's rate limit, the headers every answer carries, the log line and the metric. Routing,
 * schemas and hooks have nothing left to decide for a request the route already answered for the
 * same audience. Whatever is not so answered goes to Fastify (`handler`), which answers as always:
 * another method, `If-None-Match`, a body, a credential or response not cached now, a scope the
 * credential lacks, a limit reached, a closing server.
 */
function answerBeforeRouting(host: BeforeRouting, handler: RequestListener): RequestListener {
  const fail = (error: unknown, req: IncomingMessage, res: ServerResponse) => {
    // Never the process: Fastify answers, or the connection ends when an answer was begun.
    host.logger.error({ err: error }, 'answer before routing failed');
    if (res.headersSent) res.destroy();
    else handler(req, res);
  };
  /**
   * Each response's headers but the request's own, as the flat name-value list `writeHead` takes
   * without copying or checking an object's keys: made once per cached response.
   */
  const heads = new WeakMap<CachedResponse, string[]>();
  const headOf = (response: CachedResponse): string[] => {
    let head = heads.get(response);
    if (!head) {
      head = [];
      const headers = { ...PROTECTIVE_HEADERS, ...response.headers };
      for (const name in headers) head.push(name, headers[name]);
      head.push('content-length', String(response.body.length));
      heads.set(response, head);
    }
    return head;
  };
  const send = (
    req: IncomingMessage,
    res: ServerResponse,
    response: CachedResponse,
    limit: Record<string, number>,
    started: number,
  ) => {
    const id = requestId(req);
    const head = headOf(response).slice();
    head.push(REQUEST_ID_HEADER, id);
    for (const name in limit) head.push(name, String(limit[name]));
    res.writeHead(200, head);
    res.end(response.body);
    host.answered();
    const url = req.url ?? '';
    host.completion.completed(
      {
        method: 'GET',
        url,
        route: response.route,
        status: 200,
        ms: performance.now() - started,
        log: () => host.logger.child({ [REQUEST_ID_LOG_LABEL]: id }),
      },
      null,
    );
  };
  return (req, res) => {
    const started = performance.now();
    const { headers } = req;
    if (
      req.method !== 'GET' ||
      headers['if-none-match'] !== undefined ||
      headers['content-length'] !== undefined ||
      headers['transfer-encoding'] !== undefined ||
      !host.listening()
    ) {
      return handler(req, res);
    }
    try {
      const credential = host.credentialOf(req.socket, headers.authorization);
      const response =
        credential &&
        cachedResponse(
          host.context,
          responseKey(host.listener, credential.audience, req.url ?? '', headers['accept-language']),
        );
      if (!credential || !response || !credential.grants(response.scope)) return handler(req, res);
      credential.count().then(
        (count) => {
          try {
            // Over the limit: Fastify counts it too and answers the 429.
            if (count.refused) handler(req, res);
            else send(req, res, response, count.headers, started);
          } catch (error) {
            fail(error, req, res);
          }
        },
        (error: unknown) => fail(error, req, res),
      );
    } catch (error) {
      fail(error, req, res);
    }
  };
}

export function createHostApp(context: AppContext, options: HostOptions): HostApp {
  const limits = context.config.connectionLimits;
  const logger = options.logger.child({ listener: options.listener });
  const completion = new RequestCompletion(options.listener, context.metrics.requestDuration, logger);
  const { cachedReadCredential } = options;
  const app = Fastify({
    // The server Fastify would make, with Node's timeouts checked often (TIMEOUT_CHECK_INTERVAL_MS)
    // and, on a host with cached reads, the path before routing.
    serverFactory: (handler) => {
      const server = createServer({
        headersTimeout: limits.headersTimeoutSeconds * 1000,
        connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS,
        requestTimeout: limits.requestTimeoutSeconds * 1000,
      });
      server.on(
        'request',
        cachedReadCredential
          ? answerBeforeRouting(
              {
                context,
                listener: options.listener,
                logger,
                completion,
                credentialOf: cachedReadCredential,
                listening: () => server.listening,
                answered: () => app.answeredBeforeRouting++,
              },
              handler,
            )
          : handler,
      );
      server.keepAliveTimeout = limits.keepAliveTimeoutSeconds * 1000;
      return server;
    },
    loggerInstance: logger,
    logController: completion,
    // A path that is not valid percent-encoding (`%ZZ`): refused in the host's body, not Fastify's.
    frameworkErrors: (_error, request, reply) => {
      const error = new AppError(ErrorCode.MALFORMED_REQUEST);
      setEveryAnswerHeaders(reply as FastifyReply, request.id)
        .code(error.statusCode)
        .send(options.refusalBody(error, request.raw.url ?? ''));
    },
    // Headers too large, a request line Node cannot parse, a request too slow: answered in the
    // host's body, then the connection is closed, as Node does.
    clientErrorHandler: (failure: NodeJS.ErrnoException & { rawPacket?: unknown }, socket) => {
      if (failure.code === 'ECONNRESET' || socket.destroyed) return;
      logger.trace({ err: failure }, 'client error');
      const error = clientFailure(failure.code);
      const body = JSON.stringify(options.refusalBody(error, requestTargetOf(failure.rawPacket)));
      if (socket.writable) {
        socket.write(
          `HTTP/1.1 ${error.statusCode} ${STATUS_CODES[error.statusCode]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
            `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
      }
      socket.destroy();
    },
    genReqId: requestId,
    bodyLimit: BODY_LIMIT_BYTES,
    routerOptions: { ignoreTrailingSlash: true },
    return503OnClosing: true,
    trustProxy: fastifyTrustProxy(context.config.trustProxy),
  }).withTypeProvider<TypeBoxTypeProvider>();
  // Past the cap, new connections are closed at once: the process keeps file descriptors and
  // memory for the clients it already serves.
  if (limits.maxConnections > 0) app.server.maxConnections = limits.maxConnections;
  app.decorate('listener', options.listener);
  app.decorate('answeredBeforeRouting', 0);
  app.decorateRequest('audience', '');

  compileOnFirstUse(app);
  // Hooks run on every request take a callback: an async one costs a promise each time.
  let forwardedIgnored = context.config.trustProxy !== false;
  app.addHook('onRequest', (request, reply, done) => {
    setEveryAnswerHeaders(reply, request.id);
    if (!forwardedIgnored && request.headers['x-forwarded-for'] !== undefined) {
      // Behind a proxy every client then has the proxy's address, and shares its failure budget.
      forwardedIgnored = true;
      request.log.warn(
        "requests carry X-Forwarded-For but TRUST_PROXY is off: every client counts as the proxy's address; " +
          'set TRUST_PROXY if a proxy you run sets the header (said once)',
      );
    }
    done();
  });
  registerJsonBodyParser(app);
  app.addHook('onError', (request, reply, _error, done) => lingerForRefusedBody(request, reply, done));
  // Query strings are held to the same rules as bodies (text.ts), before any route sees them.
  app.addHook('preValidation', (request, _reply, done) => {
    const problem = unacceptableString(request.query, 'query');
    done(problem ? invalid([problem]) : undefined);
  });

  app.get('/healthz', { schema: { hide: true, response: { 200: Health } } }, async () => ({
    status: 'ok' as const,
    version: SERVICE_VERSION,
    commit: SERVICE_COMMIT,
  }));
  // Readiness is the database's: a Redis that does not answer only moves the rate limits into
  // each process, which the body says.
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
    const unavailable = await context.database.unavailable();
    const rateLimits = context.rateLimitStore?.degradation();
    const degraded = rateLimits ? { rate_limits: rateLimits } : {};
    if (!unavailable) return { status: 'ok', ...degraded };
    return reply
      .code(503)
      .send({ status: 'unavailable', reason: unavailable.reason, detail: unavailable.message, ...degraded });
  });
  return app;
}

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
 * The base URL of a listening host: the port it got, loopback for "every address". Built from the
 * socket, never from a request's Host header, which the client chooses.
 */
export function listenerUrl(app: Pick<HostApp, 'server'>): string {
  const address = app.server.address();
  if (!address || typeof address === 'string') return 'http://127.0.0.1';
  const host = address.address === '0.0.0.0' || address.address === '::' ? '127.0.0.1' : address.address;
  return `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
}

/** A host's OpenAPI document, from an instance of it that never listens. */
export async function documentOf(build: () => Promise<HostApp>): Promise<unknown> {
  const app = await build();
  try {
    await app.ready();
    return app.swagger();
  } finally {
    await app.close();
  }
}
