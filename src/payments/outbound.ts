// The outbound payment request (DECISIONS §7): for each new invoice, POST the payment context to
// the tenant's payment endpoint, signed the Standard Webhooks way, retrying with backoff, and
// record every attempt. Jobs come from the queue (queue.ts), enqueued with the invoice.

import { createHmac } from 'node:crypto';
import type { LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { sql } from 'drizzle-orm';
import { type Database, rowsOf } from '../db/client.js';
import { unavailability } from '../db/errors.js';
import { answerEach, GroupCommit, itemsJson, type Waiting } from '../db/group-commit.js';
import { invoices, paymentDeliveries, paymentEndpointBreakers } from '../db/schema.js';
import type { Logger } from '../logger.js';
import { paymentEndpointIn } from '../tenants/index.js';
import { storableStart } from '../text.js';
import { type BreakerPolicy, type EndpointVerdict, recordVerdict } from './breaker.js';
import { EndpointRefusedError, pinnedLookup, resolveEndpoint } from './endpoint-address.js';
import type { PaymentQueue, PaymentRequestContext, PaymentRequestJob } from './queue.js';

/**
 * When to try again. Attempt n (n >= 1) failed retryably: wait `base × 2^(n-1)` seconds capped at
 * `maxDelaySeconds`, with "equal jitter" (a random point in the upper half, so waits still grow
 * and many instances do not retry in step), but never less than the endpoint's `Retry-After`.
 * Give up when the next attempt would start later than `giveUpAfterSeconds` after the invoice was
 * created. Defaults: 30 s, 1 h, 24 h: attempts at about 0, 30 s, 1.5 min, 3.5 min, 7.5 min,
 * 15 min, 30 min, 1 h, 2 h, then every 30 to 60 min: 30 to 55 attempts over a day.
 */
export interface RetryPolicy {
  baseSeconds: number;
  maxDelaySeconds: number;
  giveUpAfterSeconds: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { baseSeconds: 30, maxDelaySeconds: 3600, giveUpAfterSeconds: 86_400 };

export function backoffSeconds(policy: RetryPolicy, failedAttempt: number, random = Math.random): number {
  const nominal = Math.min(policy.maxDelaySeconds, policy.baseSeconds * 2 ** Math.min(failedAttempt - 1, 30));
  return nominal / 2 + (random() * nominal) / 2;
}

/** `Retry-After` as seconds from now: delta-seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterSeconds(header: string | undefined, now = Date.now()): number | null {
  if (!header) return null;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const date = Date.parse(text);
  return Number.isNaN(date) ? null : Math.max(0, (date - now) / 1000);
}

/** Per-attempt limit on the whole exchange: connect, send, answer. */
export const REQUEST_TIMEOUT_MS = 15_000;
/** Default limit on connecting (PAYMENT_CONNECT_TIMEOUT_SECONDS): a host that is down frees its slot fast. */
export const CONNECT_TIMEOUT_MS = 3000;
/** More of the endpoint's reply than this is not read (we only want `payment_url`). */
const MAX_REPLY_BYTES = 64 * 1024;
/** How much of the reply each recorded attempt keeps, for operators to read. */
export const RESPONSE_BODY_MAX_BYTES = 1024;

/** The start of a reply body, storable as text (PostgreSQL refuses NUL). */
const replyExcerpt = (body: string) => storableStart(body, RESPONSE_BODY_MAX_BYTES);

interface EndpointReply {
  status: number;
  retryAfter: string | undefined;
  body: string;
}

class TimeoutError extends Error {
  override name = 'TimeoutError';
}

/** POSTs `body` to `url`, connecting only to `addresses`. Network failures and timeouts throw. */
function postJson(
  url: URL,
  addresses: LookupAddress[],
  headers: Record<string, string>,
  body: string,
  connectTimeoutMs: number,
) {
  return new Promise<EndpointReply>((resolve, reject) => {
    const request = (url.protocol === 'https:' ? https : http).request(url, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      lookup: pinnedLookup(addresses),
      agent: false,
    });
    const timer = setTimeout(
      () => request.destroy(new TimeoutError(`no complete answer within ${REQUEST_TIMEOUT_MS / 1000} s`)),
      REQUEST_TIMEOUT_MS,
    );
    const connectTimer = setTimeout(
      () => request.destroy(new TimeoutError(`no connection within ${connectTimeoutMs / 1000} s`)),
      connectTimeoutMs,
    );
    request.on('socket', (socket) => {
      // TLS included: a host that accepts and never finishes the handshake is as good as down.
      socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', () => clearTimeout(connectTimer));
    });
    const fail = (error: Error) => {
      clearTimeout(timer);
      clearTimeout(connectTimer);
      reject(error);
    };
    request.on('error', fail);
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= MAX_REPLY_BYTES) chunks.push(chunk);
      });
      response.on('error', fail);
      response.on('end', () => {
        clearTimeout(timer);
        const retryAfter = response.headers['retry-after'];
        resolve({ status: response.statusCode ?? 0, retryAfter, body: Buffer.concat(chunks).toString('utf8') });
      });
    });
    request.end(body);
  });
}

/** The Standard Webhooks signature header: one `v1,<base64 HMAC-SHA256>` per secret, space-separated. */
export function signatureHeader(secrets: string[], id: string, timestamp: number, body: string): string {
  return secrets
    .map((secret) => {
      const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
      return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
    })
    .join(' ');
}

const isRetryableStatus = (status: number) => status === 408 || status === 429 || status >= 500;
export const isSuccessStatus = (status: number | null) => status !== null && status >= 200 && status < 300;

/** `payment_url` of a JSON reply, when it is an http(s) URL of sane length. */
function paymentUrlOf(replyBody: string): string | null {
  let reply: unknown;
  try {
    reply = JSON.parse(replyBody);
  } catch {
    return null;
  }
  const candidate = (reply as { payment_url?: unknown } | null)?.payment_url;
  if (typeof candidate !== 'string' || candidate.length > 2000) return null;
  try {
    return ['http:', 'https:'].includes(new URL(candidate).protocol) ? candidate : null;
  } catch {
    return null;
  }
}

/**
 * How an attempt went, for the duration histogram: answered 2xx, answered otherwise, no answer in
 * time, no connection, or never sent (nothing to send to or sign with).
 */
export type AttemptKind = 'success' | 'http_error' | 'timeout' | 'network_error' | 'not_sent';

/** What one attempt came to. `retryAfter` set means "try again" (subject to the give-up limit). */
interface AttemptOutcome {
  kind: AttemptKind;
  /** What it says of the endpoint, for its breaker; none when nothing was sent. */
  verdict: EndpointVerdict | null;
  httpStatus: number | null;
  latencyMs: number | null;
  error: string | null;
  responseBody?: string;
  paymentUrl?: string | null;
  retry?: { retryAfterSeconds: number | null };
}

export interface OutboundDependencies extends SigningDependencies {
  queue: PaymentQueue;
  /** Records attempts after which none is due, by group commit: one per process. */
  finalAttempts: FinalAttempts;
  /** The callback URL handed to partners, `.../api/v1/payments/notify/`. */
  notifyUrl: string;
  retryPolicy: RetryPolicy;
  breakerPolicy: BreakerPolicy;
  log: Logger;
  /** Told how each attempt ended, for the operators' metrics. */
  onAttempt?: (report: AttemptReport) => void;
}

/** An attempt as the metrics see it. */
export interface AttemptReport {
  result: AttemptResult;
  /** The invoice's: test invoices are counted apart. */
  mode: 'live' | 'test';
  kind: AttemptKind;
  /** From start to end of the exchange (0 when nothing was sent). */
  durationSeconds: number;
  /** For a first attempt: from the enqueueing (the invoice's transaction) to the attempt's start. */
  waitedSeconds: number | null;
}

/** How an attempt ended: delivered, failed with a retry planned, or failed for good. */
export type AttemptResult = 'delivered' | 'retrying' | 'failed';

type RequestedInvoice = PaymentRequestContext['invoice'];

/** The body of a payment request (the `payment.requested` webhook), as every attempt sends it. */
export function paymentContext(invoice: RequestedInvoice, gateway: string, notifyUrl: string) {
  return {
    type: 'payment.requested',
    invoice_id: invoice.id,
    amount: invoice.amount,
    currency: invoice.currency,
    gateway,
    trip_id: invoice.tripId,
    notify_url: notifyUrl,
    created_at: invoice.createdAt.toISOString(),
  };
}

/** What the service needs to sign and send a message to a tenant's payment endpoint. */
export interface SigningDependencies {
  db: Database;
  openSecret: (sealed: string) => string;
  allowPrivateEndpoints: boolean;
  /** PAYMENT_CONNECT_TIMEOUT_SECONDS in ms; CONNECT_TIMEOUT_MS when not given. */
  connectTimeoutMs?: number;
}

/** How one signed POST ended: the endpoint's reply, or why there was none. */
export type SignedExchange =
  | { outcome: 'answered'; reply: EndpointReply; latencyMs: number }
  /** Nothing was sent: no endpoint, no secret, or an address we refuse to call. */
  | { outcome: 'not_sent'; error: string }
  | { outcome: 'network_error'; error: string; latencyMs: number };

/**
 * POSTs `body` to the tenant's payment endpoint, signed the Standard Webhooks way with every
 * active endpoint secret (`sealedSecrets`, newest first) under `messageId`. Never throws for
 * anything the endpoint or the network does. The payment request and the ping both go through here.
 */
export async function sendSignedMessage(
  deps: SigningDependencies,
  endpoint: { url: string | null; sealedSecrets: string[] },
  messageId: string,
  body: string,
  userAgent: string,
): Promise<SignedExchange> {
  if (!endpoint.url) return { outcome: 'not_sent', error: 'tenant has no payment endpoint configured' };
  const secrets: string[] = [];
  for (const sealed of endpoint.sealedSecrets) {
    try {
      secrets.push(deps.openSecret(sealed));
    } catch (error) {
      // No configured key opens it (SECRET_ENCRYPTION_KEY changed without a rekey): nothing to sign with.
      return { outcome: 'not_sent', error: `payment endpoint secret unreadable: ${(error as Error).message}` };
    }
  }
  if (secrets.length === 0) return { outcome: 'not_sent', error: 'tenant has no active payment endpoint secret' };

  const url = new URL(endpoint.url);
  const timestamp = Math.floor(Date.now() / 1000);
  const started = performance.now();
  const latency = () => Math.round(performance.now() - started);
  try {
    const addresses = await resolveEndpoint(url, deps.allowPrivateEndpoints);
    const reply = await postJson(
      url,
      addresses,
      {
        'user-agent': userAgent,
        'webhook-id': messageId,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(secrets, messageId, timestamp, body),
      },
      body,
      deps.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
    );
    return { outcome: 'answered', reply, latencyMs: latency() };
  } catch (error) {
    if (error instanceof EndpointRefusedError) return { outcome: 'not_sent', error: error.message };
    const reason =
      error instanceof Error
        ? `${(error as NodeJS.ErrnoException).code ?? error.name}: ${error.message}`
        : String(error);
    return { outcome: 'network_error', error: reason, latencyMs: latency() };
  }
}

/** One attempt at the payment request: never throws for anything the endpoint or the network does. */
async function attempt(deps: OutboundDependencies, request: PaymentRequestContext): Promise<AttemptOutcome> {
  const { invoice, tenant } = request;
  const endpoint = paymentEndpointIn(tenant, invoice.mode);
  if (!endpoint) {
    const error = `tenant has no ${invoice.mode === 'test' ? 'test ' : ''}payment endpoint configured`;
    return { kind: 'not_sent', verdict: null, httpStatus: null, latencyMs: null, error };
  }
  const body = JSON.stringify(paymentContext(invoice, tenant.gateway, deps.notifyUrl));
  // The same message id on every attempt, so the partner can deduplicate retries.
  const exchange = await sendSignedMessage(
    deps,
    { url: endpoint, sealedSecrets: request.sealedSecrets },
    `msg_${invoice.id}`,
    body,
    'partner-integrations (payment request)',
  );
  if (exchange.outcome === 'not_sent') {
    return { kind: 'not_sent', verdict: null, httpStatus: null, latencyMs: null, error: exchange.error };
  }
  if (exchange.outcome === 'network_error') {
    return {
      kind: exchange.error.startsWith('TimeoutError') ? 'timeout' : 'network_error',
      verdict: 'failing',
      httpStatus: null,
      latencyMs: exchange.latencyMs,
      error: exchange.error,
      retry: { retryAfterSeconds: null },
    };
  }
  const { reply, latencyMs } = exchange;
  const outcome = { httpStatus: reply.status, latencyMs, responseBody: replyExcerpt(reply.body) };
  if (isSuccessStatus(reply.status)) {
    return { ...outcome, kind: 'success', verdict: 'alive', error: null, paymentUrl: paymentUrlOf(reply.body) };
  }
  const error = `endpoint answered HTTP ${reply.status}`;
  // A refusal (4xx) is an endpoint alive and answering; only what a retry may cure counts as failing.
  if (!isRetryableStatus(reply.status)) return { ...outcome, kind: 'http_error', verdict: 'alive', error };
  return {
    ...outcome,
    kind: 'http_error',
    verdict: 'failing',
    error,
    retry: { retryAfterSeconds: retryAfterSeconds(reply.retryAfter) },
  };
}

/** Seconds until the next attempt, or null when there is none (success, a final answer, or past the give-up). */
function retryDelay(policy: RetryPolicy, outcome: AttemptOutcome, attemptNumber: number, createdAt: Date) {
  if (!outcome.retry) return null;
  const wait = Math.max(backoffSeconds(policy, attemptNumber), outcome.retry.retryAfterSeconds ?? 0);
  return Date.now() + wait * 1000 <= createdAt.getTime() + policy.giveUpAfterSeconds * 1000 ? wait : null;
}

/** How long an attempt's recording is tried again while the database is unreachable. */
const RECORDING_RETRY_MS = 30_000;

/** Runs `record` until it succeeds, trying again while the database is unreachable, up to RECORDING_RETRY_MS. */
async function recordPatiently<T>(deps: OutboundDependencies, trace: object, record: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + RECORDING_RETRY_MS;
  for (let wait = 250; ; wait = Math.min(wait * 2, 2000)) {
    try {
      return await record();
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

/** A queued attempt: the job's id and data, what the attempt needs (null: the invoice is gone), and when it was enqueued, when known. */
export interface PaymentRequestTask {
  id: string;
  data: PaymentRequestJob;
  request: PaymentRequestContext | null;
  enqueuedAt?: Date;
}

/**
 * Handles one queued attempt: calls the endpoint, then, in one transaction, records the attempt,
 * stores `payment_url`, updates the endpoint's breaker, schedules the next attempt if there is
 * one, and completes the job.
 */
export async function deliverPaymentRequest(deps: OutboundDependencies, job: PaymentRequestTask): Promise<void> {
  const { invoice_id: invoiceId, attempt: attemptNumber } = job.data;
  const { request } = job;
  const alreadyRecorded = request?.recorded;
  // Nothing to do when the invoice is gone, when this job ran before and only its completion was
  // lost, or when the partner has already reported an outcome (retrying would ask it to collect
  // a payment it has settled).
  if (!request || alreadyRecorded || request.invoice.status !== 'pending') {
    await deps.db.transaction((tx) => deps.queue.complete(tx, job.id, 'skipped'));
    if (request && !alreadyRecorded) {
      deps.log.info(
        { invoice_id: invoiceId, attempt: attemptNumber, status: request.invoice.status },
        'payment request not retried: invoice settled',
      );
    }
    return;
  }
  const startedAt = Date.now();
  const waitedSeconds =
    attemptNumber === 1 && job.enqueuedAt ? Math.max(0, startedAt - job.enqueuedAt.getTime()) / 1000 : null;
  const measured = await attempt(deps, request);
  // The breaker is the live endpoint's: a test endpoint's failures neither open nor close it.
  const outcome = request.invoice.mode === 'live' ? measured : { ...measured, verdict: null };
  const nextDelay = retryDelay(deps.retryPolicy, outcome, attemptNumber, request.invoice.createdAt);
  const error = outcome.error !== null && nextDelay === null ? `${outcome.error} (final: not retried)` : outcome.error;
  const result: AttemptResult = error === null ? 'delivered' : nextDelay === null ? 'failed' : 'retrying';

  const trace = { invoice_id: invoiceId, attempt: attemptNumber };
  // Logged before it is recorded: an attempt the database cannot record (it went away meanwhile)
  // still leaves this line, though the partner will see the request again (same webhook-id).
  deps.onAttempt?.({
    result,
    mode: request.invoice.mode,
    kind: outcome.kind,
    durationSeconds: outcome.kind === 'not_sent' ? 0 : (Date.now() - startedAt) / 1000,
    waitedSeconds,
  });
  deps.log.info(
    { ...trace, http_status: outcome.httpStatus, latency_ms: outcome.latencyMs, error, retry_in_s: nextDelay },
    error === null ? 'payment request delivered' : 'payment request attempt failed',
  );
  const tenantId = request.tenant.id;
  const delivery = {
    invoiceId,
    attempt: attemptNumber,
    httpStatus: outcome.httpStatus,
    latencyMs: outcome.latencyMs,
    error,
    responseBody: outcome.responseBody ?? null,
  };
  const change =
    nextDelay === null
      ? await recordPatiently(deps, trace, () => recordFinalAttempt(deps, job.id, tenantId, delivery, outcome, result))
      : await recordPatiently(deps, trace, () =>
          deps.db.transaction(async (tx) => {
            // The job first: a recording tried again after a commit whose answer was lost finds it
            // done, and neither records the attempt nor enqueues its retry twice.
            if (!(await deps.queue.complete(tx, job.id, result))) return null;
            await tx
              .insert(paymentDeliveries)
              .values({ ...delivery, nextRetryAt: new Date(Date.now() + nextDelay * 1000) });
            await deps.queue.enqueue(tx, request.invoice, attemptNumber + 1, nextDelay);
            return outcome.verdict && recordVerdict(tx, tenantId, outcome.verdict, outcome.error, deps.breakerPolicy);
          }),
        );
  if (change) logBreakerChange(deps, tenantId, change, outcome.error);
}

/** An attempt after which none is due, as the group statement of FinalAttempts records it. */
interface FinalAttempt {
  job: string;
  outcome: AttemptResult;
  invoice_id: string;
  attempt: number;
  http_status: number | null;
  latency_ms: number | null;
  error: string | null;
  response_body: string | null;
  payment_url: string | null;
  tenant_id: string;
  /** The endpoint answered (EndpointVerdict 'alive'): its closed breaker's count of failures is cleared. */
  alive: boolean;
}

/** Whether the statement recorded the attempt (its job was still active), and whether the endpoint's breaker is open or half-open. */
interface FinalRecording {
  recorded: boolean;
  failing: boolean;
}

/** Attempts in one statement at most: a bound on how long one transaction holds its row locks. */
const MAX_GROUP = 32;

/**
 * Records attempts after which none is due by group commit (src/db/group-commit.ts): those that
 * end while a group is under way go together in the next one, one statement and one commit for
 * all (the common case, a delivery, costs each its share of one round trip): each attempt, its
 * `payment_url`, its job completed, and a healthy endpoint's count of failures cleared. Only the
 * attempts whose job the statement completes are recorded: a group sent again after a commit whose
 * answer was lost records nothing twice. One group
 * under way at a time, so that two never wait for each other's breaker rows. The rarer breaker
 * changes (a failure, or a success on an endpoint whose breaker opened meanwhile) follow in a
 * transaction of their own.
 */
export class FinalAttempts {
  private readonly groups = new GroupCommit(1, MAX_GROUP, (group: Waiting<FinalAttempt, FinalRecording>[]) =>
    this.send(group),
  );

  constructor(
    private readonly db: Database,
    private readonly queue: PaymentQueue,
  ) {}

  /** Records `attempt` unless its job is done already (FinalRecording). */
  record(attempt: FinalAttempt): Promise<FinalRecording> {
    return this.groups.add(attempt);
  }

  /** One statement for `group`; an attempt that fails it is recorded alone (answerEach). */
  private send(group: Waiting<FinalAttempt, FinalRecording>[]): Promise<void> {
    return answerEach(group, async (attempts) => {
      const rows = rowsOf<FinalRecording & { item: number }>(
        await this.db.execute(sql`
          with attempt as (
            select * from jsonb_to_recordset(${itemsJson(attempts)}::jsonb) as a(
              item int, job uuid, outcome text, invoice_id uuid, attempt int, http_status int, latency_ms int,
              error text, response_body text, payment_url text, tenant_id uuid, alive boolean)
          ),
          done as (${this.queue.completionOf('attempt')}),
          first as (select * from attempt where job in (select id from done)),
          recorded as (
            insert into ${paymentDeliveries} (invoice_id, attempt, http_status, latency_ms, error, response_body)
            select invoice_id, attempt, http_status, latency_ms, error, response_body from first
          ),
          url as (
            update ${invoices} i set payment_url = a.payment_url, updated_at = now()
              from first a where i.id = a.invoice_id and a.payment_url is not null
          ),
          healthy as (
            delete from ${paymentEndpointBreakers} b using first a
             where b.tenant_id = a.tenant_id and b.state = 'closed' and a.alive
          )
          select a.item, a.job in (select id from done) as recorded,
                 exists (select 1 from ${paymentEndpointBreakers} b
                          where b.tenant_id = a.tenant_id and b.state <> 'closed') as failing
            from attempt a`),
      );
      const recordings = new Array<FinalRecording>(attempts.length);
      for (const { item, recorded, failing } of rows) recordings[item] = { recorded, failing };
      return recordings;
    });
  }
}

/** Records an attempt after which none is due (FinalAttempts), then its breaker's change, if any. */
async function recordFinalAttempt(
  deps: OutboundDependencies,
  jobId: string,
  tenantId: string,
  delivery: Omit<typeof paymentDeliveries.$inferInsert, 'nextRetryAt'>,
  outcome: AttemptOutcome,
  result: AttemptResult,
) {
  const { recorded, failing } = await deps.finalAttempts.record({
    job: jobId,
    outcome: result,
    invoice_id: delivery.invoiceId,
    attempt: delivery.attempt,
    http_status: delivery.httpStatus ?? null,
    latency_ms: delivery.latencyMs ?? null,
    error: delivery.error ?? null,
    response_body: delivery.responseBody ?? null,
    payment_url: outcome.paymentUrl ?? null,
    tenant_id: tenantId,
    alive: outcome.verdict === 'alive',
  });
  const verdict = outcome.verdict;
  if (recorded && (verdict === 'failing' || (verdict === 'alive' && failing))) {
    return deps.db.transaction((tx) => recordVerdict(tx, tenantId, verdict, outcome.error, deps.breakerPolicy));
  }
  return null;
}

function logBreakerChange(
  deps: OutboundDependencies,
  tenantId: string,
  change: NonNullable<Awaited<ReturnType<typeof recordVerdict>>>,
  error: string | null,
): void {
  const trace = { tenant_id: tenantId, consecutive_failures: change.breaker.consecutiveFailures };
  if (change.event === 'closed') {
    deps.log.info(trace, 'payment endpoint breaker closed: requests flow again');
  } else {
    deps.log.warn(
      { ...trace, next_probe_in_s: change.breaker.coolDownSeconds, error },
      change.event === 'opened'
        ? 'payment endpoint breaker opened: its requests wait for a probe'
        : 'payment endpoint probe failed: the breaker stays open',
    );
  }
}
