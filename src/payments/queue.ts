// The durable job queue behind outbound payment requests: pg-boss, in its own `pgboss` schema of
// our database, on our own connections, so a job can be enqueued in
// the very transaction that creates its invoice.
import { type SQL, sql } from 'drizzle-orm';
import PgBoss from 'pg-boss';
import type { DatabaseHandle, Transaction } from '../db/client.js';
import type { Mode } from '../tenants/index.js';

/** What pg-boss calls to run SQL (its `db` option and the `db` option of `send`/`complete`). */
type SqlRunner = PgBoss.Db;

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

export const PAYMENT_REQUEST_QUEUE = 'payment-request';
/** NOTIFY channel telling every worker that a payment request is due now. */
const NEW_WORK_CHANNEL = 'payment_request_due';

/** Payment requests waiting in one mode, and the age of the oldest (0 when none). */
export interface Backlog {
  waiting: number;
  oldestAgeSeconds: number;
}

export interface PaymentRequestJob {
  invoice_id: string;
  /** 1 for the first delivery attempt. */
  attempt: number;
  /** The endpoint it goes to, for `take`; absent from jobs enqueued by release 1.0.0. */
  tenant_id?: string;
  mode?: 'live' | 'test';
}

/** The invoice a payment request is for: what its job carries. */
export interface PaymentRequestInvoice {
  id: string;
  tenantId: string;
  mode: 'live' | 'test';
}

/** A job taken by `take`: when it was enqueued, and what its attempt needs. */
export interface TakenJob {
  id: string;
  data: PaymentRequestJob;
  enqueuedAt: Date;
  /** Read by the take itself; null when the invoice is gone. */
  request: PaymentRequestContext | null;
}

/** What an attempt needs, as the take reads it with the job. */
export interface PaymentRequestContext {
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
  tenant: { id: string; gateway: string; paymentEndpointUrl: string | null; testPaymentEndpointUrl: string | null };
  /** This attempt, or a later one, is recorded already (it ran, and only its completion was lost). */
  recorded: boolean;
  /** The tenant's signing secrets, sealed, newest first (`payment_endpoint_secrets`). */
  sealedSecrets: string[];
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

/** A row of `take_payment_requests`: the job, and its invoice and tenant (null when the invoice is gone). */
interface TakenRow {
  id: string;
  data: PaymentRequestJob;
  tenant_id: string | null;
  created_on: string | Date;
  invoice_tenant_id: string | null;
  invoice_mode: 'live' | 'test';
  invoice_status: string;
  amount: string;
  currency: string;
  trip_id: string | null;
  invoice_created_at: string | Date;
  recorded: boolean;
  gateway: string;
  payment_endpoint_url: string | null;
  test_payment_endpoint_url: string | null;
  sealed_secrets: string[];
}

function requestOf(row: TakenRow): PaymentRequestContext | null {
  if (row.invoice_tenant_id === null) return null;
  return {
    invoice: {
      id: row.data.invoice_id,
      tenantId: row.invoice_tenant_id,
      mode: row.invoice_mode,
      status: row.invoice_status,
      amount: row.amount,
      currency: row.currency,
      tripId: row.trip_id,
      createdAt: new Date(row.invoice_created_at),
    },
    tenant: {
      id: row.invoice_tenant_id,
      gateway: row.gateway,
      paymentEndpointUrl: row.payment_endpoint_url,
      testPaymentEndpointUrl: row.test_payment_endpoint_url,
    },
    recorded: row.recorded,
    sealedSecrets: row.sealed_secrets,
  };
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

/** Serialises `take` across instances (release 1.0.0's too), so that the per-endpoint limit is counted exactly. */
const TAKE_LOCK = 0x7061_7931;

/**
 * The take's indexes, on the queue's own table (pg-boss v10 partitions `pgboss.job` by queue): the
 * waiting jobs by endpoint and due time, the active ones by endpoint. Made by `start` once pg-boss
 * has made or upgraded its schema, so a table pg-boss makes anew gets them again; only those
 * missing, since even `if not exists` locks the table against the enqueueing of running instances.
 */
const TAKE_INDEXES: Record<string, string> = {
  payment_request_waiting: `((data->>'tenant_id'), (data->>'mode'), start_after, id) where state < 'active'`,
  payment_request_active: `((data->>'tenant_id'), (data->>'mode')) where state = 'active'`,
};

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
  /** The queue's own table (pg-boss v10 partitions `pgboss.job` by queue), known once started. */
  private table = '';

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
    const { rows } = await this.database.executeSql(
      `select q.partition_name as table, array(select indexname::text from pg_indexes
                                                where schemaname = 'pgboss' and tablename = q.partition_name) as indexes
         from pgboss.queue q where q.name = $1`,
      [PAYMENT_REQUEST_QUEUE],
    );
    const { table, indexes } = rows[0] as { table: string; indexes: string[] };
    if (!/^\w+$/.test(table)) throw new Error(`pg-boss queue table not recognised: ${table}`);
    for (const [name, definition] of Object.entries(TAKE_INDEXES)) {
      if (!indexes.includes(name))
        await this.database.executeSql(`create index ${name} on pgboss.${table} ${definition}`);
    }
    this.table = table;
    this.started = true;
  }

  /**
   * Brings the planner's statistics of the queue's table up to date. The take's plan is made from
   * them and kept for the session; requests that waited while no worker ran (a backlog, or the
   * first start on a queue filled since its table was made) would otherwise be planned as the
   * near-empty table the statistics still describe, reading every waiting job on each take until
   * autovacuum's next analyze.
   */
  async refreshStatistics(): Promise<void> {
    await this.database.executeSql(`analyze pgboss.${this.table}`);
  }

  /**
   * Enqueues attempt `attempt` of the invoice's payment request inside `tx`, with the endpoint it
   * goes to for the take: it exists exactly when the transaction commits. One due now also wakes
   * every worker at that commit (NOTIFY); this process's own is woken by the caller.
   */
  async enqueue(tx: Transaction, invoice: PaymentRequestInvoice, attempt: number, delaySeconds = 0): Promise<void> {
    const job: PaymentRequestJob = { invoice_id: invoice.id, attempt, tenant_id: invoice.tenantId, mode: invoice.mode };
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

  /**
   * Payment requests not yet attempted or waiting for a retry, and how long the oldest has waited,
   * per invoice mode: a partner's test endpoint being down is no live backlog. Jobs of release 1.0.0
   * carry no mode: their invoices say it.
   */
  async backlog(): Promise<Record<Mode, Backlog>> {
    const { rows } = await this.database.executeSql<{ mode: Mode; waiting: number; oldest: number }>(
      `select coalesce(job.data->>'mode', invoice.mode, 'live') as mode, count(*)::int as waiting,
              extract(epoch from now() - min(job.created_on))::float8 as oldest
         from pgboss.job job
         left join invoices invoice on job.data->>'mode' is null and invoice.id = (job.data->>'invoice_id')::uuid
        where job.name = $1 and job.state in ('created', 'retry')
        group by 1`,
      [PAYMENT_REQUEST_QUEUE],
    );
    const none: Backlog = { waiting: 0, oldestAgeSeconds: 0 };
    const of = (mode: Mode): Backlog => {
      const row = rows.find((found) => found.mode === mode);
      return row ? { waiting: Number(row.waiting), oldestAgeSeconds: Number(row.oldest) } : none;
    };
    return { live: of('live'), test: of('test') };
  }

  /**
   * The next jobs for this worker, up to `limits.slots`, marked active for `limits.worker`: oldest
   * due first within an endpoint and one endpoint after another (the first waiting request of every
   * tenant's live and test endpoint before anyone's second), skipping endpoints with `perEndpoint`
   * requests in flight and live ones whose breaker is open, except for one probe once its time has
   * come (which turns the breaker half-open until the probe's result, or the job timeout). pg-boss's
   * own fetch takes jobs in creation order only: it knows neither tenants nor breakers.
   *
   * One call of `take_payment_requests` (migrations 0013, 0014), under the advisory lock TAKE_LOCK that
   * release 1.0.0's take holds too. Each job carries its endpoint (`tenant_id`, `mode`), indexed
   * (TAKE_INDEXES): the take walks the endpoints with waiting jobs, one index probe each, and reads
   * only each one's first free places, so its cost follows the endpoints and the free slots, not the
   * length of the queue. Jobs of release 1.0.0 carry no endpoint: their invoices say it. Each job
   * comes with what its attempt needs (`request`), read by the same statement.
   */
  async take(limits: TakeLimits): Promise<TakenJob[]> {
    const { rows } = await this.database.executeSql<TakenRow>(
      'select * from take_payment_requests($1, $2, $3, $4, $5, $6, $7)',
      [
        PAYMENT_REQUEST_QUEUE,
        limits.slots,
        limits.perEndpoint,
        limits.worker,
        limits.giveUpAfterSeconds,
        this.options.jobTimeoutSeconds,
        TAKE_LOCK,
      ],
    );
    return rows.map((row) => ({
      id: row.id,
      data: row.data,
      enqueuedAt: new Date(row.created_on),
      request: requestOf(row),
    }));
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

  /**
   * The statement marking jobs done, as pg-boss's `complete` does, for a statement of the caller's:
   * those of `source`, a relation of that statement with the columns `job` (uuid) and `outcome`
   * that are still active. Returns the ids of those it marked.
   */
  completionOf(source: string): SQL {
    return sql`update pgboss.job j set completed_on = now(), state = 'completed', output = jsonb_build_object('outcome', s.outcome)
      from ${sql.raw(source)} s where j.name = ${PAYMENT_REQUEST_QUEUE} and j.id = s.job and j.state = 'active'
      returning j.id`;
  }

  /**
   * Marks a job done inside `tx`, together with whatever the attempt recorded; false when it was no
   * longer active (done already, by a commit whose answer was lost).
   */
  async complete(tx: Transaction, jobId: string, outcome: string): Promise<boolean> {
    // pg-boss answers how many jobs it completed, though its types declare nothing.
    const completed = (await this.boss.complete(
      PAYMENT_REQUEST_QUEUE,
      jobId,
      { outcome },
      { db: this.runnerFor(tx) },
    )) as { affected: number } | undefined;
    return (completed?.affected ?? 0) > 0;
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
