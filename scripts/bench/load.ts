// The load client, in its own process: autocannon as described by the LoadSpec file named on the
// command line; prints one JSON line (LoadResult).
import { readFileSync } from 'node:fs';
// @ts-expect-error autocannon ships no types
import autocannon from 'autocannon';
import { type LoadResult, type LoadSpec, notificationBody } from './lib.js';

const spec = JSON.parse(readFileSync(process.argv[2], 'utf8')) as LoadSpec;

/** Bodies other than expectBody, counted here when autocannon cannot (it refuses expectBody with `requests`). */
let unexpectedBodies = 0;

/** For callbacks: one body per request, invoices in turn (see LoadSpec for the transaction ids). */
function callbackRequests(callbacks: NonNullable<LoadSpec['callbacks']>) {
  let sent = 0;
  return [
    {
      onResponse: (_status: number, body: string) => {
        if (body !== spec.expectBody) unexpectedBodies++;
      },
      setupRequest: (request: { body?: string }) => {
        const index = sent++;
        const invoiceId = callbacks.invoiceIds[index % callbacks.invoiceIds.length];
        const transactionId =
          callbacks.transactionIds === 'per-request'
            ? `${callbacks.prefix}${index}`
            : `${callbacks.prefix}${invoiceId}`;
        request.body = notificationBody(callbacks.template, invoiceId, transactionId);
        return request;
      },
    },
  ];
}

const result = await autocannon({
  url: spec.url,
  method: spec.method ?? 'GET',
  headers: spec.headers,
  body: spec.body,
  ...(spec.callbacks ? { requests: callbackRequests(spec.callbacks) } : { expectBody: spec.expectBody }),
  connections: spec.connections,
  duration: spec.durationS,
  overallRate: spec.overallRate,
});

const output: LoadResult = {
  requestsPerSecond: result.requests.average,
  p50: result.latency.p50,
  p99: result.latency.p99,
  total: result.requests.total,
  non2xx: result.non2xx,
  errors: result.errors,
  timeouts: result.timeouts,
  mismatches: result.mismatches + unexpectedBodies,
};
console.log(JSON.stringify(output));
