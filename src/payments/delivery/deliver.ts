// One attempt of a payment request (DECISIONS §7), top to bottom: the worker (worker.ts) has
// taken it (requests.ts); here it is signed (sign.ts) and sent (send.ts), then its outcome and its
// endpoint breaker's change (breaker.ts) are recorded in one transaction, with the next attempt
// when one is due (retry.ts).
import type { DatabaseHandle } from '../../db/client.js';
import { unavailability } from '../../db/errors.js';
import { type RunStatement, statement } from '../../db/statements.js';
import type { Logger } from '../../logger.js';
import { paymentEndpointIn } from '../../tenants/index.js';
import { hasUnstorableCharacters, storableStart } from '../../text.js';
import { type BreakerChange, type BreakerPolicy, type EndpointVerdict, recordVerdict } from './breaker.js';
import { type HandOver, PaymentRequests, type RecordedAttempt, type TakenRequest } from './requests.js';
import { nextAttemptDelay, type RetryPolicy, retryAfterSeconds } from './retry.js';
import { isSuccessStatus, type SigningDependencies, sendSignedMessage } from './send.js';

/** How much of the reply each recorded attempt keeps, for operators to read. */
export const RESPONSE_BODY_MAX_BYTES = 1024;

export interface DeliveryDependencies extends SigningDependencies {
  database: DatabaseHandle;
  /** Records attempts by group commit: one per process. */
  requests: PaymentRequests;
  /** The callback URL handed to partners, `.../api/v1/payments/notify/`. */
  notifyUrl: string;
  retryPolicy: RetryPolicy;
  breakerPolicy: BreakerPolicy;
  log: Logger;
  /** Told how each attempt ended, for the operators' metrics. */
  onAttempt?: (report: AttemptReport) => void;
}

/**
 * How an attempt went, for the duration histogram: answered 2xx, answered otherwise, no answer in
 * time, no connection, or never sent (nothing to send to or sign with).
 */
export type AttemptKind = 'success' | 'http_error' | 'timeout' | 'network_error' | 'not_sent';

/** How an attempt ended: delivered, failed with a retry planned, or failed for good. */
export type AttemptResult = 'delivered' | 'retrying' | 'failed';

/** An attempt as the metrics see it. */
export interface AttemptReport {
  result: AttemptResult;
  /** The invoice's: test invoices are counted apart. */
  mode: 'live' | 'test';
  kind: AttemptKind;
  /** From start to end of the exchange (0 when nothing was sent). */
  durationSeconds: number;
  /** For a first attempt: from the invoice's commit to the attempt's start. */
  waitedSeconds: number | null;
}

/** What one attempt came to. `retryAfter` set means "try again" (subject to the give-up limit). */
interface AttemptOutcome {
  kind: AttemptKind;
  /** What it says of the endpoint, for its breaker; none when nothing was sent. */
  verdict: EndpointVerdict | null;
  httpStatus: number | null;
  latencyMs: number | null;
  error: string | null;
  responseBody: string | null;
  paymentUrl: string | null;
  /** The request as signed and sent; null when nothing was. */
  request: { url: string; webhookTimestamp: number; body: string } | null;
  retry?: { retryAfterSeconds: number | null };
}

/** A request taken for an invoice the partner has settled meanwhile: done, no attempt made. */
const SKIP = statement<[invoiceId: string, holder: string], never>(
  `update payment_requests set state = 'done', outcome = 'skipped', lease_holder = null, lease_until = null
    where invoice_id = $1 and state = 'taken' and lease_holder = $2`,
);

/**
 * Makes the attempt of `request`, which its place holds, and records it. `answered`, called once
 * the exchange has ended (the place's next request may then leave, unless the endpoint is
 * `failing`): how many of the endpoint's next requests a delivered attempt hands its row in the
 * place on to (RECORD in requests.ts), or null for none. Resolves with the requests handed the
 * row: the place's to run.
 */
export async function deliver(
  deps: DeliveryDependencies,
  request: TakenRequest,
  answered: (failing: boolean) => HandOver | null,
): Promise<TakenRequest[]> {
  const { invoice } = request;
  const trace = { invoice_id: invoice.id, attempt: request.attempt };
  // The partner has reported an outcome: retrying would ask it to collect a payment it has settled.
  if (invoice.status !== 'pending') {
    await deps.database.run(SKIP, [invoice.id, request.holder]);
    deps.log.info({ ...trace, status: invoice.status }, 'payment request not retried: invoice settled');
    return [];
  }
  const startedAt = Date.now();
  const measured = await send(deps, request);
  const handOver = answered(measured.verdict === 'failing');
  // The breaker is the live endpoint's: a test endpoint's failures neither open nor close it.
  const outcome = invoice.mode === 'live' ? measured : { ...measured, verdict: null };
  const retryIn = outcome.retry
    ? nextAttemptDelay(deps.retryPolicy, request.attempt, outcome.retry.retryAfterSeconds, invoice.createdAt)
    : null;
  const error = outcome.error !== null && retryIn === null ? `${outcome.error} (final: not retried)` : outcome.error;
  const result: AttemptResult = error === null ? 'delivered' : retryIn === null ? 'failed' : 'retrying';

  // Logged before it is recorded: an attempt the database cannot record (it went away meanwhile)
  // still leaves this line, though the partner will see the request again (same webhook-id).
  deps.onAttempt?.({
    result,
    mode: invoice.mode,
    kind: outcome.kind,
    durationSeconds: outcome.kind === 'not_sent' ? 0 : (Date.now() - startedAt) / 1000,
    waitedSeconds: request.attempt === 1 ? Math.max(0, startedAt - request.enqueuedAt.getTime()) / 1000 : null,
  });
  deps.log.info(
    { ...trace, http_status: outcome.httpStatus, latency_ms: outcome.latencyMs, error, retry_in_s: retryIn },
    error === null ? 'payment request delivered' : 'payment request attempt failed',
  );
  const attempt: RecordedAttempt = {
    invoiceId: invoice.id,
    holder: request.holder,
    attempt: request.attempt,
    attemptedAt: new Date(startedAt),
    httpStatus: outcome.httpStatus,
    latencyMs: outcome.latencyMs,
    error,
    responseBody: outcome.responseBody,
    paymentUrl: outcome.paymentUrl,
    requestUrl: outcome.request?.url ?? null,
    webhookTimestamp: outcome.request?.webhookTimestamp ?? null,
    requestBody: outcome.request?.body ?? null,
    retryInSeconds: retryIn,
    outcome: result === 'delivered' ? 'delivered' : 'failed',
    handOver: result === 'delivered' ? handOver : null,
  };
  const { change, handedTo } = await recordPatiently(deps, trace, () => record(deps, request, attempt, outcome));
  if (change) logBreakerChange(deps.log, invoice.tenantId, change, outcome.error);
  return handedTo;
}

/** The `webhook-id` of every attempt of an invoice's payment request, so the partner can deduplicate retries. */
export const paymentMessageId = (invoiceId: string) => `msg_${invoiceId}`;

/** The body of a payment request (the `payment.requested` webhook), as every attempt sends it (docs/partners.md). */
export function paymentContext(invoice: TakenRequest['invoice'], gateway: string, notifyUrl: string) {
  return {
    type: 'payment.requested',
    invoice_id: invoice.id,
    amount: invoice.amount,
    currency: invoice.currency,
    gateway,
    trip_id: invoice.tripId,
    notify_url: notifyUrl,
    created_at: invoice.createdAt.toISOString(),
    livemode: invoice.mode === 'live',
  };
}

const isRetryableStatus = (status: number) => status === 408 || status === 429 || status >= 500;

/**
 * Characters no URL holds (C0 controls, space, DEL), which the URL parser would drop or encode
 * where we store the text as sent; NUL and a lone surrogate could not be stored at all.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds.
const NOT_IN_A_URL = /[\u0000-\u0020\u007F]/;

/** `payment_url` of a JSON reply, when it is an http(s) URL of sane length, stored as sent. */
function paymentUrlOf(replyBody: string): string | null {
  let reply: unknown;
  try {
    reply = JSON.parse(replyBody);
  } catch {
    return null;
  }
  const candidate = (reply as { payment_url?: unknown } | null)?.payment_url;
  if (typeof candidate !== 'string' || candidate.length > 2000) return null;
  if (NOT_IN_A_URL.test(candidate) || hasUnstorableCharacters(candidate)) return null;
  try {
    return ['http:', 'https:'].includes(new URL(candidate).protocol) ? candidate : null;
  } catch {
    return null;
  }
}

/** Signs and sends the request, and says what came of it: never throws for anything the endpoint or the network does. */
async function send(deps: DeliveryDependencies, request: TakenRequest): Promise<AttemptOutcome> {
  const { invoice, tenant } = request;
  const nothing = { httpStatus: null, latencyMs: null, responseBody: null, paymentUrl: null, request: null };
  const endpoint = paymentEndpointIn(tenant, invoice.mode);
  if (!endpoint) {
    const error = `tenant has no ${invoice.mode === 'test' ? 'test ' : ''}payment endpoint configured`;
    return { ...nothing, kind: 'not_sent', verdict: null, error };
  }
  const body = JSON.stringify(paymentContext(invoice, tenant.gateway, deps.notifyUrl));
  const exchange = await sendSignedMessage(
    deps,
    { url: endpoint, sealedSecrets: request.sealedSecrets },
    paymentMessageId(invoice.id),
    body,
    'partner-integrations (payment request)',
  );
  if (exchange.outcome === 'not_sent') return { ...nothing, kind: 'not_sent', verdict: null, error: exchange.error };
  const sent = exchange.sent && { ...exchange.sent, body };
  if (exchange.outcome === 'network_error') {
    return {
      ...nothing,
      request: sent,
      kind: exchange.error.startsWith('TimeoutError') ? 'timeout' : 'network_error',
      verdict: 'failing',
      latencyMs: exchange.latencyMs,
      error: exchange.error,
      retry: { retryAfterSeconds: null },
    };
  }
  const { reply, latencyMs } = exchange;
  const answered = {
    httpStatus: reply.status,
    latencyMs,
    responseBody: storableStart(reply.body, RESPONSE_BODY_MAX_BYTES),
    paymentUrl: null,
    request: sent,
  };
  if (isSuccessStatus(reply.status)) {
    return { ...answered, kind: 'success', verdict: 'alive', error: null, paymentUrl: paymentUrlOf(reply.body) };
  }
  const error = `endpoint answered HTTP ${reply.status}`;
  // A refusal (4xx) is an endpoint alive and answering; only what a retry may cure counts as failing.
  if (!isRetryableStatus(reply.status)) return { ...answered, kind: 'http_error', verdict: 'alive', error };
  return {
    ...answered,
    kind: 'http_error',
    verdict: 'failing',
    error,
    retry: { retryAfterSeconds: retryAfterSeconds(reply.retryAfter) },
  };
}

/**
 * Records the attempt, and its verdict on the endpoint's breaker, in one transaction; an attempt
 * that changes no breaker (a live endpoint without one answering, or a test endpoint) is recorded
 * by group commit with those that end beside it. A breaker made meanwhile by another attempt hears
 * this one's answer after it.
 */
async function record(
  deps: DeliveryDependencies,
  request: TakenRequest,
  attempt: RecordedAttempt,
  outcome: AttemptOutcome,
): Promise<{ change: BreakerChange | null; handedTo: TakenRequest[] }> {
  const { verdict } = outcome;
  const tenantId = request.invoice.tenantId;
  const judge = (run: RunStatement, verdictOf: EndpointVerdict) =>
    recordVerdict(run, tenantId, verdictOf, outcome.error, deps.breakerPolicy);
  if (verdict === 'failing' || (verdict === 'alive' && request.breaker !== null)) {
    return deps.database.transact(async (run) => {
      const { recorded, handedTo } = await PaymentRequests.recordIn(run, attempt);
      return { change: recorded ? await judge(run, verdict) : null, handedTo };
    });
  }
  const { recorded, breaker, handedTo } = await deps.requests.record(attempt);
  if (recorded && verdict === 'alive' && breaker !== null) {
    return { change: await deps.database.transact((run) => judge(run, verdict)), handedTo };
  }
  return { change: null, handedTo };
}

/** How long an attempt's recording is tried again while the database is unreachable. */
const RECORDING_RETRY_MS = 30_000;

/** Runs `write` until it succeeds, trying again while the database is unreachable, up to RECORDING_RETRY_MS. */
async function recordPatiently<T>(deps: DeliveryDependencies, trace: object, write: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + RECORDING_RETRY_MS;
  for (let wait = 250; ; wait = Math.min(wait * 2, 2000)) {
    try {
      return await write();
    } catch (error) {
      if (!unavailability(error) || Date.now() + wait > deadline) {
        deps.log.error({ ...trace, err: error }, 'payment request attempt not recorded: it will be made again');
        throw error;
      }
      deps.log.warn(
        { ...trace, err: error },
        'payment request attempt not recorded yet: database unreachable, trying again',
      );
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

function logBreakerChange(log: Logger, tenantId: string, change: BreakerChange, error: string | null): void {
  const trace = { tenant_id: tenantId, consecutive_failures: change.breaker.consecutiveFailures };
  if (change.event === 'closed') {
    log.info(trace, 'payment endpoint breaker closed: requests flow again');
  } else {
    log.warn(
      { ...trace, next_probe_in_s: change.breaker.coolDownSeconds, error },
      change.event === 'opened'
        ? 'payment endpoint breaker opened: its requests wait for a probe'
        : 'payment endpoint probe failed: the breaker stays open',
    );
  }
}
