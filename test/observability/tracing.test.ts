// OpenTelemetry tracing (docs/operations.md): off, nothing of OpenTelemetry is registered and log
// lines carry no trace ids; on, one payment's whole trace reaches an OTLP/HTTP receiver in this
// process: the invoice's request, its statements, the payment request's take, attempt and send,
// the `traceparent` the partner received, and the callback's request (of its own trace unless it
// echoes that traceparent).
import type http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createInvoice,
  createTrip,
  keyOf,
  notificationFor,
  notify,
  showInvoice,
  tripStatus,
} from '../payments/support.js';
import { loggerInto } from '../support/logs.js';
import { LoopbackServer, PartnerEndpoint, waitFor } from '../support/partner-endpoint.js';
import { startTestService, type TestService } from '../support/service.js';

/** A span as OTLP/HTTP JSON carries it. */
interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  attributes: { key: string; value: { stringValue?: string; intValue?: string | number } }[];
}

/** An OTLP/HTTP collector of traces: every span posted to /v1/traces. */
class OtlpReceiver extends LoopbackServer {
  readonly spans: ReceivedSpan[] = [];
  /** The `service.name` of each batch's resource. */
  readonly serviceNames = new Set<string>();

  protected async handle(request: http.IncomingMessage, response: http.ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    if (request.url === '/v1/traces') {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      for (const resource of body.resourceSpans ?? []) {
        this.serviceNames.add(attribute(resource.resource, 'service.name') as string);
        for (const scope of resource.scopeSpans ?? []) this.spans.push(...scope.spans);
      }
    }
    response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  }
}

const attribute = (span: Pick<ReceivedSpan, 'attributes'>, key: string) => {
  const value = span.attributes.find((each) => each.key === key)?.value;
  return value?.stringValue ?? (value?.intValue === undefined ? undefined : Number(value.intValue));
};

/** What the OpenTelemetry API keeps on the global object once anything registers with it. */
const OTEL_GLOBAL = Symbol.for('opentelemetry.js.api.1');

/**
 * Makes a trip and its invoice, waits for the payment request's attempts (the partner answers
 * `replies`, the last delivering it), then reports it paid.
 */
async function payOneTrip(service: TestService, partner: PartnerEndpoint, path: string, replies = [{ status: 200 }]) {
  const tenant = await service.createTenant({ gateway: 'tap' });
  const url = partner.route(path, [tenant.credentials.payment_endpoint_secret], replies);
  await service.admin('PATCH', `/tenants/${tenant.tenant.id}`, { payment_endpoint_url: url });
  const trip = await createTrip(service, tenant);
  const invoice = await createInvoice(service, tenant, { trip_id: trip.id });
  await waitFor(
    'the delivery',
    async () => (await showInvoice(service, invoice.id)).deliveries.length === replies.length,
  );
  const paid = await notify(service, notificationFor(invoice), keyOf(tenant));
  expect(paid.json()).toEqual({ status: 'success' });
  expect(await tripStatus(service, trip.id)).toBe('booked');
  return { invoice, tenant, received: partner.received.get(path)! };
}

describe('tracing', () => {
  const partner = new PartnerEndpoint();
  const receiver = new OtlpReceiver();
  beforeAll(() => Promise.all([partner.start(), receiver.start()]));
  afterAll(() => Promise.all([partner.stop(), receiver.stop()]));

  it('is off without an OTLP endpoint: nothing registered, no trace ids in log lines, no traceparent sent', async () => {
    const lines: string[] = [];
    const service = await startTestService({}, loggerInto(lines, 'info'));
    try {
      const { received } = await payOneTrip(service, partner, '/untraced');
      expect(received[0].headers.traceparent).toBeUndefined();
      expect(lines.some((line) => JSON.parse(line).msg === 'payment request delivered')).toBe(true);
      for (const line of lines) expect(JSON.parse(line)).not.toHaveProperty('trace_id');
      expect((globalThis as Record<symbol, unknown>)[OTEL_GLOBAL]).toBeUndefined();
    } finally {
      await service.stop();
    }
    expect(receiver.spans).toEqual([]);
  });

  it("exports one payment's whole trace: invoice request, statements, take, attempt, send and the callback", async () => {
    const tracingEnv = {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_SERVICE_NAME: 'partner-integrations-under-test',
    };
    // The SDK reads the process's environment, as it would in a deployment.
    Object.assign(process.env, tracingEnv);
    const lines: string[] = [];
    let service: TestService | undefined;
    let paid: Awaited<ReturnType<typeof payOneTrip>>;
    try {
      service = await startTestService({ PAYMENT_RETRY_BASE_SECONDS: '0.5' }, loggerInto(lines, 'info'));
      paid = await payOneTrip(service, partner, '/traced', [{ status: 503 }, { status: 200 }]);
      // A partner that traces sends the traceparent it received back with its callback.
      const echoed = { ...keyOf(paid.tenant), traceparent: String(paid.received[1].headers.traceparent) };
      expect((await notify(service, notificationFor(paid.invoice), echoed)).statusCode).toBe(200);
      for (const url of ['/healthz', '/readyz', '/metrics']) {
        expect((await service.apps.admin!.inject({ method: 'GET', url })).statusCode).toBe(200);
      }
    } finally {
      // Closing the service exports the spans still waiting.
      await service?.stop();
      for (const name of Object.keys(tracingEnv)) delete process.env[name];
    }
    const { spans } = receiver;
    expect([...receiver.serviceNames]).toEqual(['partner-integrations-under-test']);
    const byId = new Map(spans.map((span) => [span.spanId, span]));
    const ancestry = (span: ReceivedSpan): ReceivedSpan[] => {
      const parent = span.parentSpanId ? byId.get(span.parentSpanId) : undefined;
      return parent ? [parent, ...ancestry(parent)] : [];
    };

    const invoiceRequest = spans.find((span) => span.name === 'POST /admin/v1/invoices')!;
    expect(invoiceRequest).toBeDefined();
    expect(invoiceRequest.parentSpanId || undefined).toBeUndefined();
    const trace = spans
      .filter((span) => span.traceId === invoiceRequest.traceId)
      .sort((a, b) => (BigInt(a.startTimeUnixNano) < BigInt(b.startTimeUnixNano) ? -1 : 1));
    console.table(
      trace.map((span) => ({ span: span.name, parent: span.parentSpanId ? byId.get(span.parentSpanId)?.name : '' })),
    );

    // The payment request's spans, the retry's included, descend from the invoice's request.
    const named = (name: string) => trace.filter((span) => span.name === name);
    const takes = named('payment request take');
    const attempts = named('payment request attempt');
    const sends = named('POST payment endpoint');
    expect(attempts.map((span) => attribute(span, 'payment_request.attempt')).sort()).toEqual([1, 2]);
    expect(takes).toHaveLength(2);
    for (const span of [...takes, ...attempts, ...sends]) {
      expect(ancestry(span)).toContain(invoiceRequest);
      expect(
        attribute(span, 'payment_request.invoice_id') ?? attribute(ancestry(span)[0], 'payment_request.invoice_id'),
      ).toBe(paid!.invoice.id);
    }
    expect(sends.map((span) => byId.get(span.parentSpanId!)).sort()).toEqual([...attempts].sort());

    // The partner received each send's span as traceparent: its trace is the invoice's.
    expect(paid!.received.map((request) => request.headers.traceparent).sort()).toEqual(
      sends.map((send) => `00-${invoiceRequest.traceId}-${send.spanId}-01`).sort(),
    );

    // Statements are spans of the work that sent them: the invoice's insert, the attempt's record.
    const statements = trace.filter((span) => attribute(span, 'db.system.name') === 'postgresql');
    expect(
      statements.some((span) => span.name === 'postgresql insert' && ancestry(span).includes(invoiceRequest)),
    ).toBe(true);
    expect(statements.every((span) => ancestry(span).includes(invoiceRequest))).toBe(true);
    // The worker's takes serve every trace: woken by this invoice, they are still none of its statements.
    const takeStatements = statements.filter((span) =>
      String(attribute(span, 'db.query.text')).includes('take_payment'),
    );
    expect(takeStatements).toEqual([]);

    // The callback is a request of its own trace (the partner sent no traceparent with it), with its statements.
    const [callback, echoingCallback] = spans.filter((span) => span.name === 'POST /api/v1/payments/notify/');
    expect(callback.traceId).not.toBe(invoiceRequest.traceId);
    // A callback with the traceparent the partner received joins the payment's trace, under that send.
    expect(echoingCallback.traceId).toBe(invoiceRequest.traceId);
    expect(sends.map((send) => send.spanId)).toContain(echoingCallback.parentSpanId);
    expect(spans.some((span) => span.name.startsWith('postgresql') && ancestry(span).includes(callback))).toBe(true);

    // Probes and scrapes are not traced.
    expect(spans.filter((span) => /^GET \/(healthz|readyz|metrics)/.test(span.name))).toEqual([]);
    expect(spans.some((span) => span.name === 'GET /admin/v1/invoices/:id')).toBe(true);

    // Log lines say which span they were written in.
    const logged = lines.map((line) => JSON.parse(line));
    const invoiceCompleted = logged.find(
      (line) => line.msg === 'request completed' && line.url === '/admin/v1/invoices',
    );
    expect(invoiceCompleted.trace_id).toBe(invoiceRequest.traceId);
    expect(trace.map((span) => span.spanId)).toContain(invoiceCompleted.span_id);
    const delivered = logged.find((line) => line.msg === 'payment request delivered');
    expect(delivered).toMatchObject({ trace_id: invoiceRequest.traceId });
    expect(attempts.map((span) => span.spanId)).toContain(delivered.span_id);
  });
});
