// The durable job queue behind outbound payment requests: pg-boss, in its own `pgboss` schema of
// our database, on our own connections, so a job can be enqueued in
// the very transaction that creates its invoice.
import PgBoss from 'pg-boss';
import type { DatabaseHandle, Executor } from '../db/client.js';

/** What pg-boss calls to run SQL (its `db` option and the `db` option of `send`/`complete`). */
interface SqlRunner {
  executeSql(text: string, values?: unknown[]): Promise<{ rows: any[] }>;
}

interface PostgresClient {
  unsafe(text: string, values?: unknown[]): Promise<Iterable<any>>;
  reserve?(): Promise<PostgresClient & { release(): void }>;
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

/**
 * A runner on a driver client: the pool (`db.$client`) or an open transaction. Without parameters,
 * pg-boss sends whole scripts (its schema, wrapped in BEGIN/COMMIT): postgres.js runs those on one
 * reserved connection (it refuses BEGIN on a shared pool).
 */
function driverRunner(client: unknown): SqlRunner {
  const postgres = client as PostgresClient;
  return {
    async executeSql(text, values = []) {
      if (values.length === 0 && postgres.reserve && /^\s*BEGIN\b/i.test(text)) {
        const connection = await postgres.reserve();
        try {
          return { rows: [...(await connection.unsafe(text))] };
        } finally {
          connection.release();
        }
      }
      return { rows: [...(await postgres.unsafe(text, toParameters(values)))] };
    },
  };
}

/**
 * The driver client under a Drizzle database or transaction. Drizzle keeps it on `session.client`; its own `execute` cannot be used, because it numbers every `$n` occurrence as
 * a new parameter and pg-boss reuses parameters with different types in one statement.
 */
function driverClientOf(executor: Executor): unknown {
  return (executor as unknown as { session: { client: unknown } }).session.client;
}

const PAYMENT_REQUEST_QUEUE = 'payment-request';

export interface PaymentRequestJob {
  invoice_id: string;
  /** 1 for the first delivery attempt. */
  attempt: number;
}

interface QueueOptions {
  /** Whether this process also runs maintenance (expiring stuck jobs); worker processes do. */
  supervise: boolean;
  /** PAYMENT_JOB_TIMEOUT_SECONDS: a job still running after this long is taken for dead. */
  jobTimeoutSeconds: number;
}

/**
 * Crash recovery only: retries are scheduled by the worker itself (outbound.ts), as new jobs,
 * because pg-boss's own backoff cannot honour a `Retry-After`. A job whose process died mid-call
 * expires after the job timeout, is found by the next maintenance run (every quarter of the
 * timeout) and runs again a quarter of the timeout later, up to CRASH_RETRIES times. Both are set
 * on each job, so a changed timeout applies to an existing queue's new jobs.
 */
const CRASH_RETRIES = 3;

export class PaymentQueue {
  private readonly boss: PgBoss;
  private readonly jobTiming: { expireInSeconds: number; retryDelay: number };
  private started = false;

  constructor(
    private readonly database: DatabaseHandle,
    options: QueueOptions,
  ) {
    const quarter = Math.max(1, Math.round(options.jobTimeoutSeconds / 4));
    this.jobTiming = { expireInSeconds: options.jobTimeoutSeconds, retryDelay: quarter };
    this.boss = new PgBoss({
      db: driverRunner(driverClientOf(database.db)),
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

  /** Enqueues a delivery attempt inside `tx`: it exists exactly when the transaction commits. */
  async enqueue(tx: Executor, job: PaymentRequestJob, delaySeconds = 0): Promise<void> {
    await this.boss.send(PAYMENT_REQUEST_QUEUE, job, {
      db: this.runnerFor(tx),
      ...this.jobTiming,
      ...(delaySeconds > 0 && { startAfter: Math.round(delaySeconds * 1000) / 1000 }),
    });
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

  /** Marks a job done inside `tx`, together with whatever the attempt recorded. */
  async complete(tx: Executor, jobId: string, outcome: string): Promise<void> {
    await this.boss.complete(PAYMENT_REQUEST_QUEUE, jobId, { outcome }, { db: this.runnerFor(tx) });
  }

  /** Runs `handle` for each job, up to `concurrency` at a time. */
  async work(concurrency: number, handle: (job: { id: string; data: PaymentRequestJob }) => Promise<void>) {
    await this.boss.work<PaymentRequestJob>(
      PAYMENT_REQUEST_QUEUE,
      { batchSize: concurrency, pollingIntervalSeconds: 0.5 },
      async (jobs) => {
        const results = await Promise.allSettled(jobs.map((job) => handle(job)));
        // Jobs that failed unexpectedly (database down, a bug) go back to pg-boss's crash retries.
        const failure = results.find((result) => result.status === 'rejected');
        if (failure) throw failure.reason;
      },
    );
  }

  /** Stops polling, lets running attempts finish (up to `timeoutMs`); the database stays open. */
  async stop(timeoutMs: number): Promise<void> {
    if (!this.started) return;
    this.started = false;
    await this.boss.stop({ graceful: true, close: false, wait: true, timeout: timeoutMs });
  }

  private runnerFor(executor: Executor): SqlRunner {
    return driverRunner(driverClientOf(executor));
  }
}
