// Runs payment requests: up to `concurrency` at once, a new one taken as soon as a slot frees, as
// soon as one is enqueued (this process's own invoices are handed over at commit, other
// processes' are announced by NOTIFY), and a look every POLL_MS for retries and probes coming due.
// Each job is completed or failed on its own (outbound.ts); the queue picks which (queue.ts).
import { randomInt } from 'node:crypto';
import type { DatabaseHandle } from '../db/client.js';
import type { Logger } from '../logger.js';
import type { PaymentQueue, TakeLimits, TakenJob } from './queue.js';

/** How often the worker looks for retries and breaker probes that came due, and for dead workers' jobs. */
const POLL_MS = 1000;
/** The lock class of the liveness locks: a worker holds (LIVENESS_CLASS, its id) while it runs. */
const LIVENESS_CLASS = 0x7061;

export interface WorkerOptions {
  /** PAYMENT_WORKER_CONCURRENCY: requests in flight in this process. */
  concurrency: number;
  /** PAYMENT_ENDPOINT_CONCURRENCY. */
  perEndpoint: number;
  giveUpAfterSeconds: number;
  log: Logger;
  /** Told when the number of requests in flight here changes. */
  onInFlight?: (count: number) => void;
}

export class PaymentWorker {
  /** The id this worker's jobs carry, and the second half of its liveness lock. */
  private readonly id = String(randomInt(1, 2 ** 31));
  private readonly running = new Map<string, Promise<void>>();
  private taking: Promise<void> | null = null;
  private wanted = false;
  private stopped = false;
  private poller: NodeJS.Timeout | undefined;
  private releaseLiveness: (() => void) | null = null;
  private liveness: Promise<void> | null = null;

  constructor(
    private readonly database: DatabaseHandle,
    private readonly queue: PaymentQueue,
    private readonly options: WorkerOptions,
    private readonly handle: (job: TakenJob) => Promise<void>,
  ) {}

  async start(): Promise<void> {
    await this.holdLiveness();
    await this.queue.onNewWork(() => this.wake());
    this.poller = setInterval(() => this.wake(true), POLL_MS);
    this.wake(true);
  }

  /** Takes jobs while there are free slots and due jobs; called again by whatever may have changed that. */
  wake(sweep = false): void {
    if (this.stopped) return;
    if (this.taking) {
      this.wanted = true;
      return;
    }
    this.taking = this.fill(sweep)
      .catch((error) => this.options.log.error({ err: error }, 'payment requests not taken: trying again shortly'))
      .finally(() => {
        this.taking = null;
        if (this.wanted) {
          this.wanted = false;
          this.wake();
        }
      });
  }

  private async fill(sweep: boolean): Promise<void> {
    if (sweep) await this.sweep();
    const limits: Omit<TakeLimits, 'slots'> = {
      perEndpoint: this.options.perEndpoint,
      giveUpAfterSeconds: this.options.giveUpAfterSeconds,
      worker: this.id,
    };
    while (!this.stopped) {
      const slots = this.options.concurrency - this.running.size;
      if (slots <= 0) return;
      const jobs = await this.queue.take({ ...limits, slots });
      for (const job of jobs) this.run(job);
      if (jobs.length < slots) return;
    }
  }

  private run(job: TakenJob): void {
    const done = this.handle(job)
      .catch((error) => {
        // Its outcome could not be recorded (database away, a bug): the job stays active under this
        // worker's id, and the next sweep that reaches the database gives it back to be made again.
        this.options.log.error({ err: error, invoice_id: job.data.invoice_id }, 'payment request job left to retry');
      })
      .finally(() => {
        this.running.delete(job.id);
        this.options.onInFlight?.(this.running.size);
        this.wake();
      });
    this.running.set(job.id, done);
    this.options.onInFlight?.(this.running.size);
  }

  /** Keeps the liveness lock held (again, after a lost connection) and gives back dead workers' jobs. */
  private async sweep(): Promise<void> {
    const { rows } = await this.database.executeSql(
      `select count(*)::int as held from pg_locks
        where locktype = 'advisory' and granted and objsubid = 1 and classid = $1::bigint::oid and objid::text = $2`,
      [LIVENESS_CLASS, this.id],
    );
    if (rows[0].held === 0) await this.holdLiveness();
    const reclaimed = await this.queue.reclaim(this.id, [...this.running.keys()], LIVENESS_CLASS);
    if (reclaimed > 0) this.options.log.warn({ jobs: reclaimed }, 'payment requests of a stopped worker taken back');
  }

  /** Holds the session lock (LIVENESS_CLASS, id) on a connection of its own until `stop`. */
  private async holdLiveness(): Promise<void> {
    this.releaseLiveness?.();
    const key = (BigInt(LIVENESS_CLASS) << 32n) + BigInt(this.id);
    let held!: () => void;
    const locked = new Promise<void>((resolve) => {
      held = resolve;
    });
    this.liveness = this.database
      .withAdvisoryLock(Number(key), async () => {
        held();
        await new Promise<void>((resolve) => {
          this.releaseLiveness = resolve;
        });
      })
      // A lost connection loses the lock with it: the next sweep takes it again.
      .catch(() => held());
    await locked;
  }

  /** Takes no more jobs, lets those under way finish (up to `timeoutMs`), then lets go of the lock. */
  async stop(timeoutMs: number): Promise<void> {
    this.stopped = true;
    clearInterval(this.poller);
    await this.taking;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(this.running.values()),
      new Promise((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    this.releaseLiveness?.();
    await this.liveness;
  }
}
