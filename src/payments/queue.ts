// The durable job queue behind outbound payment requests: pg-boss, in its own `pgboss` schema of
// our database, on our own connections, so a job can be enqueued in
// the very transaction that creates its invoice.
import { type SQL, sql } from 'drizzle-orm';
import PgBoss from 'pg-boss';
import type { DatabaseHandle, Transaction } from '../db/client.js';

/** What pg-boss calls to run SQL (its `db` option and the `db` option of `send`/`complete`). */
interface SqlRunner {
  executeSql(text: string, values?: unknown[]): Promise<{ rows: any[] }>;
}

/**
 * pg-boss passes JSON data as plain objects and leaves optional arguments undefined; postgres.js
 * takes neither as parameters (node-postgres would stringify and null them), so we do.
 */
function toParameters(values: unknown[]): unknown[] {
  return values.map((value) => {
    if (value === undefined) return null;
    if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
      return JSON.stringify(value);
    }
    return value;
  });
}

/** pg-boss's SQL run by the handle: on the pool, or inside `transaction` when given. */
function pgBossRunner(database: DatabaseHandle, transaction?: Transaction): SqlRunner {
  return { executeSql: (text, values = []) => database.executeSql(text, toParameters(values), transaction) };
}

const PAYMENT_REQUEST_QUEUE = 'payment-request';
/** NOTIFY channel telling every worker that a payment request is due now. */
const NEW_WORK_CHANNEL = 'payment_request_due';

export interface PaymentRequestJob {
  invoice_id: string;
  /** 1 for the first delivery attempt. */
  attempt: number;
}

/** A job taken by `take`: the tenant whose endpoint it goes to, and when it was enqueued. */
export interface TakenJob {
  id: string;
  data: PaymentRequestJob;
  tenantId: string | null;
  enqueuedAt: Date;
}

interface QueueOptions {
  /** Whether this process also runs maintenance (expiring stuck jobs); worker processes do. */
  supervise: boolean;
  /** PAYMENT_JOB_TIMEOUT_SECONDS: a job still running after this long is taken for dead. */
  jobTimeoutSeconds: number;
  /** Told of a first attempt recorded as failed without a job (no endpoint), for the metrics. */
  onUnsent?: (mode: 'live' | 'test') => void;
}

/** What `take` observes: the limits, and the age past which a failing endpoint no longer holds a request. */
export interface TakeLimits {
  /** Jobs wanted: this worker's free slots. */
  slots: number;
  /** PAYMENT_ENDPOINT_CONCURRENCY: requests in flight per tenant's endpoint, all instances together. */
  perEndpoint: number;
  /** Requests of invoices older than this go even to a failing endpoint: their last attempt. */
  giveUpAfterSeconds: number;
  /** The worker's id (`PaymentWorker`), kept on each job it holds. */
  worker: string;
}

/** A row of TAKE_JOBS. */
interface TakenRow {
  id: string;
  /** JSON: parsed by postgres.js, text from PGlite's `exec`. */
  data: PaymentRequestJob | string;
  tenant_id: string | null;
  created_on: string | Date;
}

/**
 * Crash recovery only: retries are scheduled by the worker itself (outbound.ts), as new jobs,
 * because pg-boss's own backoff cannot honour a `Retry-After`. A job whose process died mid-call
 * expires after the job timeout, is found by the next maintenance run (every quarter of the
 * timeout) and runs again a quarter of the timeout later, up to CRASH_RETRIES times. Both are set
 * on each job, so a changed timeout applies to an existing queue's new jobs. A worker that sees the
 * dead one silent gives its jobs back sooner (`reclaim`).
 */
const CRASH_RETRIES = 3;

/** Serialises `take` across instances, so that the per-endpoint limit is counted exactly. */
const TAKE_LOCK = 0x7061_7931;

/**
 * The next jobs for this worker, oldest first within an endpoint and one endpoint after another
 * (the first waiting request of every tenant's live and test endpoint before anyone's second),
 * skipping endpoints with `perEndpoint` requests in flight and live ones whose breaker is open, except for one probe once its
 * time has come (which turns the breaker half-open until the probe's result, or the job timeout).
 * pg-boss's own fetch takes jobs in creation order only: it knows neither tenants nor breakers.
 * $1 queue, $2 slots, $3 per endpoint, $4 worker, $5 give-up seconds, $6 job timeout seconds: all
 * written into the script by `take`, numbers and our own names only.
 */
const TAKE_JOBS = `
  with running as (
    select i.tenant_id, i.mode, count(*)::int as in_flight
      from pgboss.job j join invoices i on i.id = (j.data->>'invoice_id')::uuid
     where j.name = $1 and j.state = 'active'
     group by i.tenant_id, i.mode
  ),
  due as (
    select j.id, j.created_on, i.tenant_id, coalesce(r.in_flight, 0) as in_flight,
           b.state as breaker, b.probe_at <= now() as probe_due,
           i.created_at < now() - make_interval(secs => $5) as past_give_up,
           row_number() over (partition by i.tenant_id, i.mode order by j.created_on, j.id) as place
      from pgboss.job j
      left join invoices i on i.id = (j.data->>'invoice_id')::uuid
      left join running r on r.tenant_id = i.tenant_id and r.mode = i.mode
      left join payment_endpoint_breakers b on b.tenant_id = i.tenant_id and i.mode = 'live'
     where j.name = $1 and j.state < 'active' and j.start_after < now()
  ),
  chosen as (
    select id, tenant_id, coalesce(breaker, 'closed') <> 'closed' as probe
      from due
     where place <= $3 - in_flight
       and (coalesce(breaker, 'closed') = 'closed' or past_give_up or (probe_due and place = 1 and in_flight = 0))
     order by place, created_on
     limit $2
  ),
  taken as (
    update pgboss.job j
       set state = 'active', started_on = now(), output = jsonb_build_object('worker', $4::text),
           retry_count = case when j.started_on is not null then j.retry_count + 1 else j.retry_count end
      from chosen
     where j.name = $1 and j.id = chosen.id and j.state < 'active'
    returning j.id, j.data, j.created_on, chosen.tenant_id, chosen.probe
  ),
  probing as (
    update payment_endpoint_breakers b
       set state = 'half_open', probe_at = now() + make_interval(secs => $6)
      from taken
     where taken.probe and b.tenant_id = taken.tenant_id
  )
  select id, data, created_on, tenant_id from taken`;

/**
 * Gives back, to be taken again now, the active jobs of workers that died (silent for longer than
 * $4 seconds in `payment_workers`, the jobs taken longer ago than that) and this worker's own that it no longer runs (their outcome
 * could not be recorded). $1 queue, $2 this worker, $3 the ids it runs.
 */
const RECLAIM_JOBS = `
  update pgboss.job j set state = 'retry', start_after = now(), output = null
   where j.name = $1 and j.state = 'active' and j.output ? 'worker'
     and j.id <> all($3::uuid[])
     and (j.output->>'worker' = $2
          or (j.started_on < now() - make_interval(secs => $4)
              and not exists (select 1 from payment_workers w
                               where w.id = j.output->>'worker' and w.seen_at > now() - make_interval(secs => $4))))
  returning j.id`;

export class PaymentQueue {
  private readonly boss: PgBoss;
  private readonly jobTiming: { expireInSeconds: number; retryDelay: number };
  private readonly localListeners: (() => void)[] = [];
  private started = false;

  constructor(
    private readonly database: DatabaseHandle,
    private readonly options: QueueOptions,
  ) {
    const quarter = Math.max(1, Math.round(options.jobTimeoutSeconds / 4));
    this.jobTiming = { expireInSeconds: options.jobTimeoutSeconds, retryDelay: quarter };
    this.boss = new PgBoss({
      db: pgBossRunner(database),
      schema: 'pgboss',
      supervise: options.supervise,
      maintenanceIntervalSeconds: quarter,
      schedule: false,
      migrate: true,
    });
  }

  /** Creates or upgrades the `pgboss` schema and the queue; call under the schema lock. */
  async start(onError: (error: Error) => void): Promise<void> {
    this.boss.on('error', onError);
    await this.boss.start();
    await this.boss.createQueue(PAYMENT_REQUEST_QUEUE, {
      name: PAYMENT_REQUEST_QUEUE,
      retryLimit: CRASH_RETRIES,
      ...this.jobTiming,
    });
    this.started = true;
  }

  /**
   * Enqueues a delivery attempt inside `tx`: it exists exactly when the transaction commits. One due
   * now also wakes every worker at that commit (NOTIFY); this process's own is woken by the caller.
   */
  async enqueue(tx: Transaction, job: PaymentRequestJob, delaySeconds = 0): Promise<void> {
    const runner = this.runnerFor(tx);
    await this.boss.send(PAYMENT_REQUEST_QUEUE, job, {
      db: runner,
      ...this.jobTiming,
      ...(delaySeconds > 0 && { startAfter: Math.round(delaySeconds * 1000) / 1000 }),
    });
    if (delaySeconds <= 0) await runner.executeSql('select pg_notify($1, $2)', [NEW_WORK_CHANNEL, '']);
  }

  /**
   * Calls `onDue` whenever a request due now is enqueued: by this process (`announce`) or another
   * (NOTIFY), and when listening (re)starts, when notifications may have been missed.
   */
  async onNewWork(onDue: () => void): Promise<void> {
    this.localListeners.push(onDue);
    await this.database.listen(NEW_WORK_CHANNEL, onDue, onDue);
  }

  /** Counts a first attempt that could not be made (recorded with its invoice, no job). */
  countUnsent(mode: 'live' | 'test'): void {
    this.options.onUnsent?.(mode);
  }

  /** Tells this process's worker that a transaction enqueueing a request due now has committed. */
  announce(): void {
    for (const listener of this.localListeners) listener();
  }

  /** Payment requests not yet attempted or waiting for a retry, and how long the oldest has waited. */
  async backlog(): Promise<{ waiting: number; oldestAgeSeconds: number }> {
    const { rows } = await this.database.executeSql(
      `select count(*)::int as waiting,
              coalesce(extract(epoch from now() - min(created_on)), 0)::float8 as oldest
         from pgboss.job where name = $1 and state in ('created', 'retry')`,
      [PAYMENT_REQUEST_QUEUE],
    );
    return { waiting: Number(rows[0].waiting), oldestAgeSeconds: Number(rows[0].oldest) };
  }

  /** Takes up to `limits.slots` jobs fairly (TAKE_JOBS), marked active for `limits.worker`. */
  async take(limits: TakeLimits): Promise<TakenJob[]> {
    const values = [
      PAYMENT_REQUEST_QUEUE,
      limits.slots,
      limits.perEndpoint,
      limits.worker,
      limits.giveUpAfterSeconds,
      this.options.jobTimeoutSeconds,
    ].map((value) => (typeof value === 'number' ? String(Math.trunc(value)) : `'${value.replaceAll("'", "''")}'`));
    // One round trip: two statements sent together run as one transaction, the second with a
    // snapshot taken once the lock is held (so the previous holder's take is counted). Not waiting
    // for the disk at commit: the request leaves right after it, and a take lost in a database
    // crash only makes the attempt again, as a worker's crash does.
    const script = `select pg_advisory_xact_lock(${TAKE_LOCK}), set_config('synchronous_commit', 'off', true);
      ${TAKE_JOBS.replace(/\$(\d)/g, (_match, index) => values[Number(index) - 1])}`;
    const rows = await this.runScript(script);
    return rows.map((row) => ({
      id: row.id,
      data: typeof row.data === 'string' ? JSON.parse(row.data) : row.data,
      tenantId: row.tenant_id,
      enqueuedAt: new Date(row.created_on),
    }));
  }

  /** Runs statements in one round trip (the simple protocol: no parameters); the rows of the last. */
  private async runScript(script: string): Promise<TakenRow[]> {
    // postgres.js answers a script with the rows of each statement. On the pool, never on a
    // reserved connection: postgres.js 3.4 throws out of the process when one's server goes away
    // (porsager/postgres#1208).
    const { rows } = await this.database.executeSql(script);
    return (rows.at(-1) ?? []) as TakenRow[];
  }

  /** Gives back jobs whose worker is gone, or that `worker` holds but no longer runs (RECLAIM_JOBS). */
  async reclaim(worker: string, running: string[], silenceSeconds: number): Promise<number> {
    const { rows } = await this.database.executeSql(RECLAIM_JOBS, [
      PAYMENT_REQUEST_QUEUE,
      worker,
      running,
      silenceSeconds,
    ]);
    return rows.length;
  }

  /** The statement marking a job done, as pg-boss's `complete` does, for a statement of the caller's. */
  completion(jobId: string, outcome: string): SQL {
    return sql`update pgboss.job set completed_on = now(), state = 'completed', output = ${JSON.stringify({ outcome })}::jsonb
      where name = ${PAYMENT_REQUEST_QUEUE} and id = ${jobId}::uuid and state = 'active'`;
  }

  /** Marks a job done inside `tx`, together with whatever the attempt recorded. */
  async complete(tx: Transaction, jobId: string, outcome: string): Promise<void> {
    await this.boss.complete(PAYMENT_REQUEST_QUEUE, jobId, { outcome }, { db: this.runnerFor(tx) });
  }

  /** Stops maintenance; the database stays open. Workers stop on their own (PaymentWorker.stop). */
  async stop(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    await this.boss.stop({ graceful: true, close: false, wait: true, timeout: 5000 });
  }

  private runnerFor(tx: Transaction): SqlRunner {
    return pgBossRunner(this.database, tx);
  }
}
