// Payment requests as rows of payment_requests (src/db/schema.ts): enqueued with their invoice,
// taken by a worker under a lease, recorded with their attempt. Every statement the queue sends is
// here.
import { count, eq, min, sql } from 'drizzle-orm';
import type { DatabaseHandle, Transaction } from '../../db/client.js';
import { answerEach, GroupCommit, type Waiting } from '../../db/group-commit.js';
import { paymentRequests } from '../../db/schema.js';
import { type RunStatement, statement } from '../../db/statements.js';
import type { Mode } from '../../tenants/index.js';
import { activeTraceparent } from '../../tracing.js';

/** NOTIFY channel telling every worker that a payment request is due now. */
const NEW_WORK_CHANNEL = 'payment_request_due';
/** Serialises takes across instances, so that each endpoint's window is counted exactly. */
const TAKE_LOCK = 0x7061_7932;

/**
 * Asks for attempt 1 of the payment requests of `invoices` (a CTE of invoice rows) in the statement
 * that inserts them, a part of it: they exist exactly when it commits. `traceparent`, the SQL of
 * the creating request's trace context (activeTraceparent), which their attempts continue.
 */
export const enqueueFirstAttempts = (invoices: string, traceparent: string) =>
  `insert into payment_requests (invoice_id, tenant_id, mode, traceparent)
   select id, tenant_id, mode, ${traceparent} from ${invoices}`;

/** Payment requests waiting in one mode, and the age of the oldest (0 when none). */
export interface Backlog {
  waiting: number;
  oldestAgeSeconds: number;
}

/** The invoice a payment request is for. */
export interface PaymentRequestInvoice {
  id: string;
  tenantId: string;
  mode: 'live' | 'test';
}

/** A request taken by a worker: its attempt, and what the attempt needs, read by the take itself. */
export interface TakenRequest {
  invoice: {
    id: string;
    tenantId: string;
    mode: 'live' | 'test';
    status: string;
    amount: string;
    currency: string;
    tripId: string | null;
    createdAt: Date;
  };
  attempt: number;
  /** When this attempt was asked for (the invoice's commit, a retry's recording, a resend). */
  enqueuedAt: Date;
  tenant: { id: string; gateway: string; paymentEndpointUrl: string | null; testPaymentEndpointUrl: string | null };
  /** The tenant's signing secrets, sealed, newest first (`payment_endpoint_secrets`). */
  sealedSecrets: string[];
  /** The live endpoint's breaker state when taken; null when it has none (never failed, or a test request). */
  breaker: string | null;
  /** The trace of the request that created the invoice (W3C `traceparent`), when it was traced. */
  traceparent: string | null;
  /** Its lease holder: the place it goes out from, `<worker>#<number>` (TAKE). */
  holder: string;
}

/** What `take` observes. */
export interface TakeLimits {
  /** Places wanted: this worker's free ones. */
  places: number;
  /** PAYMENT_ENDPOINT_CONCURRENCY: places (requests in flight) per tenant's endpoint, all instances together. */
  perEndpoint: number;
  /** Requests a place holds at most: the one in flight and those behind it. */
  placeDepth: number;
  /** Requests of invoices older than this go even to a failing endpoint: their last attempt. */
  giveUpAfterSeconds: number;
  /** The worker's id: its places are named after it. */
  worker: string;
  /** The number of the first place taken: the worker never names two places alike. */
  firstPlace: number;
  /** How long a lease lasts unless renewed. */
  leaseSeconds: number;
  /** How long a probe keeps its breaker half-open before another may go (PAYMENT_JOB_TIMEOUT_SECONDS). */
  probeSeconds: number;
}

/** Timestamps come as their text: the driver's parsers are Drizzle's, which leaves them so. */
interface TakenRow {
  invoice_id: string;
  attempt: number;
  enqueued_at: string;
  mode: 'live' | 'test';
  invoice_status: string;
  amount: string;
  currency: string;
  trip_id: string | null;
  invoice_created_at: string;
  tenant_id: string;
  gateway: string;
  payment_endpoint_url: string | null;
  test_payment_endpoint_url: string | null;
  sealed_secrets: string[];
  breaker: string | null;
  traceparent: string | null;
  lease_holder: string;
}

/**
 * New places for a worker, each with its endpoint's next due requests (up to `placeDepth`) leased
 * to it under the place's name: oldest due first within an endpoint and one endpoint after another
 * (every tenant's live and test endpoint's first place before anyone's second), skipping endpoints
 * with `perEndpoint` places and live ones whose breaker is open, except for one probe (a place of
 * its own) once its time has come, which turns the breaker half-open. Migration 0029.
 */
const TAKE = statement<
  [
    places: number,
    perEndpoint: number,
    placeDepth: number,
    worker: string,
    firstPlace: number,
    leaseSeconds: number,
    giveUpSeconds: number,
    probeSeconds: number,
    lock: number,
  ],
  TakenRow
>('select * from take_payment_request_places($1, $2, $3, $4, $5, $6, $7, $8, $9)');

/**
 * Renews the leases of the requests worker `$1`'s places hold (`$2`), and makes due again now those
 * whose lease ended: a worker killed or stalled, or an attempt whose outcome could not be
 * recorded. Not one of `$1`'s with its lease running, though it is not in `$2`: a recording under
 * way as the list was made may have handed it to `$1`, which sends it. Rows another transaction
 * holds (a recording under way) are left to the next sweep: waiting for them, while the recording
 * waited for rows this one had locked, deadlocked the two.
 */
const RENEW_LEASES = statement<[worker: string, held: string[], leaseSeconds: number], { released: number }>(
  `with renewed as (
     update payment_requests set lease_until = now() + make_interval(secs => $3)
      where invoice_id in (
        select invoice_id from payment_requests
         where state = 'taken' and split_part(lease_holder, '#', 1) = $1 and invoice_id = any($2::uuid[])
           for update skip locked)
   ),
   released as (
     update payment_requests set state = 'waiting', lease_holder = null, lease_until = null, due_at = now()
      where invoice_id in (
        select invoice_id from payment_requests
         where state = 'taken' and lease_until < now()
           and not (split_part(lease_holder, '#', 1) = $1 and invoice_id = any($2::uuid[]))
           for update skip locked)
     returning 1
   )
   select count(*)::int as released from released`,
);

/**
 * Makes the requests place `$1` holds among `$2` due again, unsent: the place closed (its
 * endpoint failing, its worker stopping) with them. Due as they were: they lose no turn.
 */
const GIVE_BACK = statement<[holder: string, invoiceIds: string[]], never>(
  `update payment_requests set state = 'waiting', lease_holder = null, lease_until = null
    where invoice_id = any($2::uuid[]) and state = 'taken' and lease_holder = $1`,
);

/** Release 1.0.0's jobs waiting in pg-boss's tables, moved here (migration 0023). */
const MOVE_FROM_PGBOSS = statement<[silenceSeconds: number], { moved: number }>(
  'select move_pgboss_payment_requests($1) as moved',
);

/** An attempt's outcome, as `record` stores it. */
export interface RecordedAttempt {
  invoiceId: string;
  /** The place that holds it (its lease holder). */
  holder: string;
  attempt: number;
  /** When it started: when the request left, as the partner's receipt log has it. */
  attemptedAt: Date;
  httpStatus: number | null;
  latencyMs: number | null;
  error: string | null;
  responseBody: string | null;
  paymentUrl: string | null;
  /** What was sent (payment_deliveries); null when nothing was. */
  requestUrl: string | null;
  webhookTimestamp: number | null;
  requestBody: string | null;
  /** Seconds until the next attempt; null when none is due. */
  retryInSeconds: number | null;
  /** How the request ends when no attempt is due. */
  outcome: 'delivered' | 'failed';
  /**
   * Set when the worker has room: a delivered attempt to an endpoint whose breaker is closed hands
   * its row in its place on to as many of the endpoint's next due requests, leased to the same
   * place for so long, in the recording's own transaction (RECORD).
   */
  handOver: HandOver | null;
}

/** The endpoint's next due requests a delivered attempt's place takes in its stead, and their lease. */
export interface HandOver {
  requests: number;
  leaseSeconds: number;
}

type Nullable<T> = { [K in keyof T]: T[K] | null };

/**
 * The request handed over (`handed`, with its invoice `i` and tenant `t`) as TakenRow's columns, but
 * its breaker: the endpoint's, which the recording reads anyway. Null when none was.
 */
const HANDED_COLUMNS = `handed.invoice_id, handed.attempt, handed.enqueued_at, handed.mode,
          i.status as invoice_status, i.amount::text as amount, i.currency, i.trip_id,
          i.created_at as invoice_created_at, t.id as tenant_id, t.gateway, t.payment_endpoint_url,
          t.test_payment_endpoint_url, case when t.id is not null then payment_endpoint_secrets(t.id) end as sealed_secrets,
          handed.traceparent, handed.lease_holder`;

/**
 * Records attempts of requests their place holds, each an item of the JSON array `$1`: the
 * request waits for its next attempt, or is done; the attempt is a row of payment_deliveries; a
 * `payment_url` lands on the invoice. A request asked for again while its attempt was under way (a
 * resend, whose attempt number is higher) waits for that one. Nothing for an item whose place no
 * longer holds it (its lease ended, and it was given to another): `recorded` false. `breaker` is
 * the live endpoint's breaker state after it. A delivered attempt with `handOver` hands its row in
 * its place on to the endpoint's next due requests, taken here for the same place (lease holder):
 * the places per endpoint stay as many, so the window is kept without TAKE's lock, and the place
 * goes on without a take of its own.
 */
const RECORD = statement<
  [attempts: string],
  { item: number; recorded: boolean; breaker: string | null } & Nullable<Omit<TakenRow, 'breaker'>>
>(
  `with attempt as (
     select * from jsonb_to_recordset($1::jsonb) as a(
       item int, "invoiceId" uuid, holder text, attempt int, "attemptedAt" timestamptz, "httpStatus" int,
       "latencyMs" int, error text,
       "responseBody" text, "paymentUrl" text, "requestUrl" text, "webhookTimestamp" int8, "requestBody" text,
       "retryInSeconds" float8, outcome text, "handOver" jsonb)
   ),
   request as (
     update payment_requests r
        set state = case when r.attempt > a.attempt or a."retryInSeconds" is not null then 'waiting' else 'done' end,
            attempt = case when r.attempt > a.attempt or a."retryInSeconds" is null then r.attempt else a.attempt + 1 end,
            due_at = case when r.attempt > a.attempt or a."retryInSeconds" is null then r.due_at
                          else now() + make_interval(secs => a."retryInSeconds") end,
            enqueued_at = case when r.attempt > a.attempt or a."retryInSeconds" is null then r.enqueued_at else now() end,
            outcome = case when r.attempt > a.attempt or a."retryInSeconds" is not null then null else a.outcome end,
            lease_holder = null, lease_until = null
       from attempt a
      where r.invoice_id = a."invoiceId" and r.state = 'taken' and r.lease_holder = a.holder
     returning a.item, r.tenant_id, r.mode
   ),
   recorded as (
     insert into payment_deliveries (invoice_id, attempt, attempted_at, http_status, latency_ms, error,
                                     response_body, request_url, webhook_timestamp, request_body, next_retry_at)
     select a."invoiceId", a.attempt, a."attemptedAt", a."httpStatus", a."latencyMs", a.error, a."responseBody",
            a."requestUrl", a."webhookTimestamp", a."requestBody", now() + make_interval(secs => a."retryInSeconds")
       from attempt a join request using (item)
   ),
   url as (
     update invoices i set payment_url = a."paymentUrl", updated_at = now()
       from attempt a join request using (item)
      where i.id = a."invoiceId" and a."paymentUrl" is not null
   ),
   -- What delivered attempts hand on, a row for each request asked for, numbered within their endpoint.
   handing as (
     select request.item, request.tenant_id, request.mode, a.holder, (a."handOver"->>'leaseSeconds')::float8 as lease,
            row_number() over (partition by request.tenant_id, request.mode order by request.item, n) as nth
       from attempt a join request using (item)
       cross join generate_series(1, (a."handOver"->>'requests')::int) n
      where a.outcome = 'delivered' and a."retryInSeconds" is null
        and not exists (select from payment_endpoint_breakers b
                         where b.tenant_id = request.tenant_id and request.mode = 'live' and b.state <> 'closed')
   ),
   -- Each such endpoint's first due requests, as many as asked for.
   following as (
     select e.tenant_id, e.mode, r.invoice_id,
            row_number() over (partition by e.tenant_id, e.mode order by r.due_at, r.invoice_id) as nth
       from (select tenant_id, mode, count(*)::int as wanted from handing group by 1, 2) e
       cross join lateral (
         select r.invoice_id, r.due_at from payment_requests r
          where r.state = 'waiting' and r.tenant_id = e.tenant_id and r.mode = e.mode and r.due_at <= now()
          order by r.due_at, r.invoice_id
          limit e.wanted
          for update skip locked) r
   ),
   handed as (
     update payment_requests r
        set state = 'taken', lease_holder = h.holder, lease_until = now() + make_interval(secs => h.lease)
       from following f join handing h using (tenant_id, mode, nth)
      where r.invoice_id = f.invoice_id and r.state = 'waiting'
     returning h.item, h.nth, r.invoice_id, r.attempt, r.enqueued_at, r.mode, r.tenant_id, r.traceparent, r.lease_holder
   )
   select a.item, request.item is not null as recorded,
          (select b.state from payment_endpoint_breakers b
            where b.tenant_id = request.tenant_id and request.mode = 'live') as breaker,
          ${HANDED_COLUMNS}
     from attempt a left join request using (item)
     left join handed using (item)
     left join invoices i on i.id = handed.invoice_id
     left join tenants t on t.id = handed.tenant_id
    order by a.item, handed.nth`,
);

/** Attempts in one recording statement at most: a bound on how long one transaction holds its row locks. */
const MAX_GROUP = 32;

/**
 * Whether an attempt was recorded, the live endpoint's breaker state after it, and the requests it
 * handed its row in its place on to, in the order they go.
 */
export interface Recording {
  recorded: boolean;
  breaker: string | null;
  handedTo: TakenRequest[];
}

const recordingsOf = async (run: RunStatement, attempts: RecordedAttempt[]) => {
  const rows = await run(RECORD, [JSON.stringify(attempts.map((attempt, item) => ({ item, ...attempt })))]);
  const recordings = new Array<Recording>(attempts.length);
  for (const row of rows) {
    const { item, recorded, breaker } = row;
    recordings[item] ??= { recorded, breaker, handedTo: [] };
    if (row.invoice_id !== null) recordings[item].handedTo.push(takenRequestOf({ ...(row as TakenRow), breaker }));
  }
  return recordings;
};

/** Payment requests in the database: what the worker takes, and what creating an invoice or a resend asks for. */
export class PaymentRequests {
  private readonly localListeners: (() => void)[] = [];
  /** A NOTIFY to other processes is under way (`announce`), and whether another is wanted after it. */
  private notifying: Promise<void> | null = null;
  private notifyAgain = false;
  /**
   * Attempts that end while a recording is under way are recorded together by the next one, one
   * statement and one commit for all (src/db/group-commit.ts); one group under way at a time.
   */
  private readonly recordings = new GroupCommit(1, MAX_GROUP, (group: Waiting<RecordedAttempt, Recording>[]) =>
    answerEach(group, (attempts) =>
      recordingsOf(
        this.database.run,
        attempts.map((waiting) => waiting.call),
      ),
    ),
  );

  constructor(
    private readonly database: DatabaseHandle,
    private readonly onUnsent?: (mode: 'live' | 'test') => void,
  ) {}

  /**
   * Locks the invoice's request, if it has one, inside `tx`. A transaction that locks the invoice
   * as well calls this first: recording an attempt locks the request, then the invoice (the
   * attempt's foreign key), and a transaction taking them the other way round deadlocks with it.
   */
  async lock(tx: Transaction, invoiceId: string): Promise<void> {
    await tx
      .select({ invoiceId: paymentRequests.invoiceId })
      .from(paymentRequests)
      .where(eq(paymentRequests.invoiceId, invoiceId))
      .for('update');
  }

  /**
   * Asks for one more attempt now inside `tx`, numbered after `lastAttempt` (the last recorded);
   * one under way is followed by it. Returns its number. The request keeps its trace context; one
   * made anew (pruned meanwhile) takes the active span's.
   */
  async requestAgain(tx: Transaction, invoice: PaymentRequestInvoice, lastAttempt: number): Promise<number> {
    const [row] = await tx
      .insert(paymentRequests)
      .values({
        invoiceId: invoice.id,
        tenantId: invoice.tenantId,
        mode: invoice.mode,
        attempt: lastAttempt + 1,
        traceparent: activeTraceparent(),
      })
      .onConflictDoUpdate({
        target: paymentRequests.invoiceId,
        set: {
          attempt: sql`greatest(excluded.attempt, ${paymentRequests.attempt} + (${paymentRequests.state} <> 'waiting')::int)`,
          state: sql`case when ${paymentRequests.state} = 'taken' then 'taken' else 'waiting' end`,
          dueAt: sql`now()`,
          enqueuedAt: sql`now()`,
          outcome: null,
        },
      })
      .returning({ attempt: paymentRequests.attempt });
    return row.attempt;
  }

  /**
   * Tells this process's worker that a transaction asking for a request due now has committed,
   * and the other processes' by NOTIFY: one at a time, those asked for meanwhile sharing the next,
   * since a NOTIFY takes a lock every commit of the server waits for.
   */
  announce(): void {
    for (const listener of this.localListeners) listener();
    if (this.notifying) {
      this.notifyAgain = true;
      return;
    }
    this.notifying = this.database
      .run(NOTIFY, [NEW_WORK_CHANNEL])
      .then(
        () => {},
        // Another process's worker finds it at its next look instead.
        () => {},
      )
      .finally(() => {
        this.notifying = null;
        if (this.notifyAgain) {
          this.notifyAgain = false;
          this.announce();
        }
      });
  }

  /**
   * Calls `onDue` whenever a request due now is asked for: by this process (`announce`) or another
   * (NOTIFY), and when listening (re)starts, when notifications may have been missed.
   */
  async onNewWork(onDue: () => void): Promise<void> {
    this.localListeners.push(onDue);
    await this.database.listen(NEW_WORK_CHANNEL, onDue, onDue);
  }

  /** Counts a first attempt that could not be made (recorded with its invoice, no request). */
  countUnsent(mode: 'live' | 'test'): void {
    this.onUnsent?.(mode);
  }

  /**
   * Payment requests not yet attempted or waiting for a retry, and how long the oldest has waited,
   * per invoice mode: a partner's test endpoint being down is no live backlog.
   */
  async backlog(): Promise<Record<Mode, Backlog>> {
    const rows = await this.database.db
      .select({ mode: paymentRequests.mode, waiting: count(), oldest: min(paymentRequests.enqueuedAt) })
      .from(paymentRequests)
      .where(eq(paymentRequests.state, 'waiting'))
      .groupBy(paymentRequests.mode);
    const of = (mode: Mode): Backlog => {
      const row = rows.find((found) => found.mode === mode);
      if (!row?.oldest) return { waiting: 0, oldestAgeSeconds: 0 };
      return {
        waiting: row.waiting,
        oldestAgeSeconds: Math.max(0, (Date.now() - new Date(row.oldest).getTime()) / 1000),
      };
    };
    return { live: of('live'), test: of('test') };
  }

  /**
   * Brings the planner's statistics of payment_requests up to date. The take's plan is made from
   * them and kept for the session; a backlog that built while no worker ran would otherwise be
   * planned as the near-empty table the statistics still describe, until autovacuum's next analyze.
   */
  async refreshStatistics(): Promise<void> {
    await this.database.run(ANALYZE, []);
  }

  /** New places for `limits.worker`, with the requests they hold (TAKE). */
  async take(limits: TakeLimits): Promise<TakenRequest[]> {
    const rows = await this.database.run(TAKE, [
      limits.places,
      limits.perEndpoint,
      limits.placeDepth,
      limits.worker,
      limits.firstPlace,
      limits.leaseSeconds,
      limits.giveUpAfterSeconds,
      limits.probeSeconds,
      TAKE_LOCK,
    ]);
    return rows.map(takenRequestOf);
  }

  /** Renews `worker`'s leases on `held`; gives back what no worker holds any more (RENEW_LEASES). */
  async renewLeases(worker: string, held: string[], leaseSeconds: number): Promise<number> {
    const [row] = await this.database.run(RENEW_LEASES, [worker, held, leaseSeconds]);
    return row.released;
  }

  /** Makes the requests `holder` holds among `invoiceIds` due again, unsent (GIVE_BACK). */
  async giveBack(holder: string, invoiceIds: string[]): Promise<void> {
    await this.database.run(GIVE_BACK, [holder, invoiceIds]);
  }

  /** Moves the requests release 1.0.0 left in pg-boss's tables here; how many (MOVE_FROM_PGBOSS). */
  async moveFromPgBoss(silenceSeconds: number): Promise<number> {
    const [row] = await this.database.run(MOVE_FROM_PGBOSS, [silenceSeconds]);
    return row.moved;
  }

  /** Records an attempt by group commit (RECORD). */
  record(attempt: RecordedAttempt): Promise<Recording> {
    return this.recordings.add(attempt);
  }

  /** Records an attempt (RECORD) inside the transaction of `run`, with what else it changes. */
  static async recordIn(run: RunStatement, attempt: RecordedAttempt): Promise<Recording> {
    const [recording] = await recordingsOf(run, [attempt]);
    return recording;
  }
}

const NOTIFY = statement<[channel: string], never>(`select pg_notify($1, '')`);
const ANALYZE = statement<[], never>('analyze payment_requests');

/** A taken request as the worker runs it, from its row (TAKE's, or a handed-over one's). */
function takenRequestOf(row: TakenRow): TakenRequest {
  return {
    invoice: {
      id: row.invoice_id,
      tenantId: row.tenant_id,
      mode: row.mode,
      status: row.invoice_status,
      amount: row.amount,
      currency: row.currency,
      tripId: row.trip_id,
      createdAt: new Date(row.invoice_created_at),
    },
    attempt: row.attempt,
    enqueuedAt: new Date(row.enqueued_at),
    tenant: {
      id: row.tenant_id,
      gateway: row.gateway,
      paymentEndpointUrl: row.payment_endpoint_url,
      testPaymentEndpointUrl: row.test_payment_endpoint_url,
    },
    sealedSecrets: row.sealed_secrets,
    breaker: row.breaker,
    traceparent: row.traceparent,
    holder: row.lease_holder,
  };
}
