// OpenTelemetry tracing (docs/operations.md), off unless OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set. Off, nothing of OpenTelemetry is loaded or registered
// (the SDK is imported when tracing starts) and every helper here comes down to one test of
// `running`. On, the SDK reads the other standard OTEL_* variables itself (OTEL_SERVICE_NAME,
// OTEL_TRACES_SAMPLER, OTEL_BSP_*, OTEL_EXPORTER_OTLP_*).
import type { Attributes, Context, Span } from '@opentelemetry/api';
import type { FastifyInstance } from 'fastify';
import { SERVICE_NAME, SERVICE_VERSION } from './version.js';

type Api = typeof import('@opentelemetry/api');

interface Running {
  api: Api;
  tracer: ReturnType<Api['trace']['getTracer']>;
  /** Reads and writes `traceparent` the W3C way, whatever OTEL_PROPAGATORS says for incoming requests. */
  w3c: import('@opentelemetry/core').W3CTraceContextPropagator;
  fastify: import('@fastify/otel').FastifyOtelInstrumentation;
  provider: import('@opentelemetry/sdk-trace-node').NodeTracerProvider;
}

/** Tracing as started in this process; null while off. */
let running: Running | null = null;

/** How long closing the service waits for the last spans to be exported. */
const FLUSH_TIMEOUT_MS = 5000;

/** Whether the environment asks for tracing: an OTLP endpoint for traces is set. */
export function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * Loads and registers the SDK when the environment asks for tracing: spans go in batches to the
 * OTLP/HTTP endpoint. One service per process: a second start finds it running.
 */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (running || !tracingConfigured(env)) return;
  const [api, core, node, { OTLPTraceExporter }, resources, semantic, { FastifyOtelInstrumentation }] =
    await Promise.all([
      import('@opentelemetry/api'),
      import('@opentelemetry/core'),
      import('@opentelemetry/sdk-trace-node'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/semantic-conventions'),
      import('@fastify/otel'),
    ]);
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the environment's detector) win over the defaults.
  const resource = resources
    .defaultResource()
    .merge(
      resources.resourceFromAttributes({
        [semantic.ATTR_SERVICE_NAME]: SERVICE_NAME,
        [semantic.ATTR_SERVICE_VERSION]: SERVICE_VERSION,
      }),
    )
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new node.NodeTracerProvider({
    resource,
    spanProcessors: [new node.BatchSpanProcessor(new OTLPTraceExporter())],
  });
  // The context manager (AsyncLocalStorage) and the propagator of incoming requests.
  provider.register();
  const fastify = new FastifyOtelInstrumentation({
    // A span per request and per handler; one per hook of the pipeline would drown them.
    instrumentHooks: false,
    requestHook: (span, request) => span.updateName(`${request.method} ${request.routeOptions.url ?? request.url}`),
  });
  fastify.setTracerProvider(provider);
  running = {
    api,
    tracer: provider.getTracer(SERVICE_NAME, SERVICE_VERSION),
    w3c: new core.W3CTraceContextPropagator(),
    fastify,
    provider,
  };
}

/**
 * Exports the spans not yet sent (waiting up to FLUSH_TIMEOUT_MS) and unregisters the SDK. Called
 * when the service closes.
 */
export async function stopTracing(): Promise<void> {
  if (!running) return;
  const { api, provider } = running;
  running = null;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    provider.shutdown().catch(() => {}),
    new Promise((resolve) => {
      timer = setTimeout(resolve, FLUSH_TIMEOUT_MS);
    }),
  ]);
  clearTimeout(timer);
  api.trace.disable();
  api.context.disable();
  api.propagation.disable();
}

/**
 * Gives a host's requests their spans (@fastify/otel): called on the new app before anything
 * else is registered on it, so that every route and the 404 handler are covered.
 */
export function traceRequests(app: FastifyInstance): void {
  if (!running) return;
  // Called directly rather than registered: registration is deferred to the app's start, after its routes.
  running.fastify.plugin()(app, {}, () => {});
}

/** What a span is: its kind, attributes, and optionally its parent, a `traceparent` value. */
interface SpanOptions {
  attributes?: Attributes;
  /** An outgoing request (`client`), or work inside the service (the default). */
  kind?: 'client' | 'internal';
  /**
   * The span's parent as a W3C `traceparent`, instead of the active span: a payment request's
   * attempts are children of the request that created the invoice. Null: the active span.
   */
  parent?: string | null;
}

/** The context a span of `options` starts in. */
function parentContext(tracing: Running, parent: string | null | undefined): Context {
  const { api } = tracing;
  if (!parent) return api.context.active();
  return tracing.w3c.extract(api.ROOT_CONTEXT, { traceparent: parent }, api.defaultTextMapGetter);
}

function startSpan(tracing: Running, name: string, options: SpanOptions, startTime?: number): [Span, Context] {
  const { api } = tracing;
  const parent = parentContext(tracing, options.parent);
  const kind = options.kind === 'client' ? api.SpanKind.CLIENT : api.SpanKind.INTERNAL;
  const span = tracing.tracer.startSpan(name, { kind, attributes: options.attributes, startTime }, parent);
  return [span, api.trace.setSpan(parent, span)];
}

function endSpan(tracing: Running, span: Span, error?: unknown): void {
  if (error !== undefined) {
    span.recordException(error instanceof Error ? error : String(error));
    span.setStatus({ code: tracing.api.SpanStatusCode.ERROR, message: (error as Error)?.message });
  }
  span.end();
}

/**
 * Runs `task` in a span named `name` (the active span while it runs), ended when `task` settles;
 * with tracing off, just runs `task`. `task` is given the span's `traceparent` (null when off).
 */
export async function inSpan<T>(
  name: string,
  options: SpanOptions,
  task: (traceparent: string | null) => Promise<T>,
): Promise<T> {
  const tracing = running;
  if (!tracing) return task(null);
  const [span, context] = startSpan(tracing, name, options);
  try {
    const result = await tracing.api.context.with(context, () => task(traceparentIn(tracing, context)));
    endSpan(tracing, span);
    return result;
  } catch (error) {
    endSpan(tracing, span, error);
    throw error;
  }
}

/** Records a span of work that has ended (from `startTime`, in ms since the epoch, to now). */
export function recordSpan(name: string, options: SpanOptions, startTime: number): void {
  const tracing = running;
  if (!tracing) return;
  startSpan(tracing, name, options, startTime)[0].end();
}

function traceparentIn(tracing: Running, context: Context): string | null {
  const carrier: { traceparent?: string } = {};
  tracing.w3c.inject(context, carrier, tracing.api.defaultTextMapSetter);
  return carrier.traceparent ?? null;
}

/** The active span as a W3C `traceparent`, to keep with work done later; null with none (or tracing off). */
export function activeTraceparent(): string | null {
  const tracing = running;
  return tracing ? traceparentIn(tracing, tracing.api.context.active()) : null;
}

/**
 * `query` (a database statement, not yet settled) as a span, child of the active span: statements
 * outside any span (the worker's polling) are not traced. Returns `query` itself.
 */
export function traceStatement<Q extends PromiseLike<unknown>>(text: string, query: Q): Q {
  const tracing = running;
  if (!tracing?.api.trace.getSpan(tracing.api.context.active())) return query;
  const operation = /^\s*(\w+)/.exec(text)?.[1]?.toLowerCase() ?? 'statement';
  const [span] = startSpan(tracing, `postgresql ${operation}`, {
    attributes: { 'db.system.name': 'postgresql', 'db.operation.name': operation, 'db.query.text': text },
  });
  query.then(
    () => endSpan(tracing, span),
    (error) => endSpan(tracing, span, error),
  );
  return query;
}

/**
 * Runs `task` outside any span: for work that serves many traces (the worker's takes), which would
 * otherwise count in the trace of whatever woke it.
 */
export function outsideAnySpan<T>(task: () => T): T {
  const tracing = running;
  return tracing ? tracing.api.context.with(tracing.api.ROOT_CONTEXT, task) : task();
}

/** `task` bound to the active context: for callbacks a library calls from a context of its own. */
export function keepingActiveSpan<F extends (...args: never[]) => unknown>(task: F): F {
  const tracing = running;
  return tracing ? tracing.api.context.bind(tracing.api.context.active(), task) : task;
}

/** `trace_id` and `span_id` of the active span, for a log line; nothing without one. */
export function activeSpanIds(): { trace_id?: string; span_id?: string } {
  const tracing = running;
  const span = tracing?.api.trace.getSpan(tracing.api.context.active());
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}
