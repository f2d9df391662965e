// Cached reads answered before routing. When Fastify has answered a listing page or an effective
// prompt set from cached bytes (src/http/response-cache.ts), the answer is remembered under the
// request that asked for it: its raw URL and Accept-Language, for the audience of its credential
// (anyone holding the scope on the backend host, the tenant on the integrations host). The same
// request again is answered here, in the server's request listener: the credential from the
// credential cache, its rate limit, the headers every answer carries, the log line and the
// metric of the request, then the bytes. Everything else goes to Fastify, which answers as it
// always has: another method, `If-None-Match`, a credential or a page not cached right now, a
// scope the credential lacks, a limit reached, the listener closing.
//
// Why: through Fastify's routing and hooks a cached page cost ~60 µs of CPU, twice a bare route
// sending the same bytes, and ~45 µs answered here (BENCHMARKS.md): routing, schemas and hooks have
// nothing left to decide once the same request was answered for the same credential's audience.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Histogram } from 'prom-client';
import { cacheGeneration } from '../cache.js';
import type { ListenerName } from '../config.js';
import type { AppContext } from '../context.js';
import { loggableUrl } from '../logger.js';
import { LIMIT_HEADER_NAMES, type LimitValues, type RateLimitGuard } from './rate-limit.js';
import { type CachedResponse, peekRememberedRead, type RememberedRead, rememberRead } from './response-cache.js';

/** Who presents a credential, as far as a cached read needs to know. */
export interface ReadIdentity {
  credentialId: string;
  /** Whose answers it may be given: the same for every backend key, the tenant on `/api/v1/`. */
  audience: string;
  scopes: readonly string[];
}

/** How a host's credentials are checked for cached reads. */
export interface CachedReadAccess {
  /** The credential of this Authorization header from the credential cache; undefined when not there or not valid. */
  identify(authorization: string | undefined): ReadIdentity | undefined;
  /** The audience of a request Fastify answered, as `identify` would give it. */
  audienceOf(request: FastifyRequest): string;
  /** The scope the route of a request Fastify answered needs, if any. */
  scopeOf?(request: FastifyRequest): string | undefined;
  limits: RateLimitGuard;
}

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

interface CachedReadsOptions {
  context: AppContext;
  listener: ListenerName;
  logger: FastifyBaseLogger;
  /** Headers every answer of the host carries. */
  protectiveHeaders: Readonly<Record<string, string>>;
  requestId(req: IncomingMessage): string;
}

/**
 * How long the credential found for a connection's Authorization header stands for the same header
 * on that connection (a keep-alive client sends its key on every request): no digest, no look-up.
 * A change to credentials or tenants ends it at once; shorter than the credential cache's second.
 */
const CONNECTION_IDENTITY_MS = 250;

interface ConnectionIdentity {
  authorization: string;
  identity: ReadIdentity;
  generation: number;
  until: number;
}

export class CachedReads {
  private access: CachedReadAccess | null = null;
  private readonly durations = new Map<string, { observe(seconds: number): void }>();
  private readonly connectionIdentities = new WeakMap<Socket, ConnectionIdentity>();
  /** Requests answered here so far. */
  answered = 0;

  constructor(private readonly options: CachedReadsOptions) {}

  /** Turns cached reads on for the host, with how its credentials are checked. */
  enable(access: CachedReadAccess): void {
    this.access = access;
  }

  /** The server's request listener: cached reads here, everything else to Fastify's `handler`. */
  listener(server: Server, handler: RequestListener): RequestListener {
    return (req, res) => {
      // A closing server leaves its answer (503, Connection: close) to Fastify.
      if (!server.listening) return handler(req, res);
      let answered: boolean;
      try {
        answered = this.answer(req, res, handler);
      } catch (error) {
        // Never the process: whatever went wrong here, Fastify answers (or the connection ends).
        this.options.logger.error({ err: error }, 'cached read failed');
        if (res.headersSent) return void res.destroy();
        answered = false;
      }
      if (!answered) handler(req, res);
    };
  }

  /** After Fastify sent `response` for `request`: the same request gets the same bytes from here. */
  remember(request: FastifyRequest, response: CachedResponse, readAt: number): void {
    const { access } = this;
    if (!access || request.method !== 'GET' || request.raw.url === undefined) return;
    const head: string[] = [];
    for (const headers of [this.options.protectiveHeaders, response.headers]) {
      for (const name in headers) head.push(name, headers[name]);
    }
    head.push('content-length', String(response.body.length));
    const read: RememberedRead = {
      body: response.body,
      head,
      route: request.routeOptions.url ?? request.raw.url,
      scope: access.scopeOf?.(request),
    };
    const key = this.keyOf(access.audienceOf(request), request.raw.url, request.headers['accept-language']);
    rememberRead(this.options.context, key, read, readAt);
  }

  private keyOf(audience: string, url: string, acceptLanguage: string | undefined): string {
    return `${this.options.listener}|${audience}|${url}|${acceptLanguage ?? ''}`;
  }

  /** True when the request is answered here; it is then answered whatever happens. */
  private answer(req: IncomingMessage, res: ServerResponse, handler: RequestListener): boolean {
    const { access } = this;
    const { headers } = req;
    if (!access || req.method !== 'GET' || headers['if-none-match'] !== undefined) return false;
    const started = performance.now();
    const identity = this.identify(access, req.socket, headers.authorization);
    if (!identity) return false;
    const read = peekRememberedRead(
      this.options.context,
      this.keyOf(identity.audience, req.url ?? '', headers['accept-language']),
    );
    if (!read || (read.scope !== undefined && !identity.scopes.includes(read.scope))) return false;
    const admitted = access.limits.admit(identity.credentialId);
    if (admitted === null) return false;
    if (!(admitted instanceof Promise)) {
      this.send(req, res, read, admitted, started);
      return true;
    }
    // Counters in Redis: answered when they have counted; over a limit, Fastify answers the refusal.
    admitted.then(
      (limit) => (limit ? this.send(req, res, read, limit, started) : handler(req, res)),
      (error: unknown) => {
        this.options.logger.error({ err: error }, 'cached read failed');
        handler(req, res);
      },
    );
    return true;
  }

  private identify(access: CachedReadAccess, socket: Socket, authorization: string | undefined) {
    const now = Date.now();
    const known = this.connectionIdentities.get(socket);
    if (known && known.authorization === authorization && known.generation === cacheGeneration() && now < known.until) {
      return known.identity;
    }
    const identity = access.identify(authorization);
    if (identity && authorization !== undefined) {
      const generation = cacheGeneration();
      this.connectionIdentities.set(socket, {
        authorization,
        identity,
        generation,
        until: now + CONNECTION_IDENTITY_MS,
      });
    }
    return identity;
  }

  private send(req: IncomingMessage, res: ServerResponse, read: RememberedRead, limit: LimitValues, started: number) {
    const id = this.options.requestId(req);
    const head = read.head.slice();
    head.push('x-request-id', id);
    for (let index = 0; index < limit.length; index++) head.push(LIMIT_HEADER_NAMES[index], String(limit[index]));
    res.writeHead(200, head);
    res.end(read.body);
    this.answered++;
    const ms = performance.now() - started;
    this.durationOf(read.route).observe(ms / 1000);
    const logger = this.options.logger as Logger;
    if (logger.isLevelEnabled('info')) {
      logger.info(
        { request_id: id, method: 'GET', url: loggableUrl(req.url ?? ''), status: 200, ms: Math.round(ms * 100) / 100 },
        'request completed',
      );
    }
  }

  /** The request duration series of a route, as the host's onResponse hook records it. */
  private durationOf(route: string): { observe(seconds: number): void } {
    let series = this.durations.get(route);
    if (!series) {
      const histogram: Histogram = this.options.context.metrics.requestDuration;
      series = histogram.labels({ listener: this.options.listener, route, method: 'GET', status: 200 });
      this.durations.set(route, series);
    }
    return series;
  }
}
