// Runs payment requests: up to `concurrency` at once, a new one taken as soon as a slot frees, as
// soon as one is enqueued (this process's own invoices are handed over at commit, other
// processes' are announced by NOTIFY), and a look every POLL_MS for retries and probes coming due.
// Each job is completed or failed on its own (outbound.ts); the queue picks which (queue.ts).
import { randomUUID } from 'node:crypto';
import type { DatabaseHandle } from '../db/client.js';
import type { Logger } from '../logger.js';
import type { PaymentQueue, TakeLimits, TakenJob } from './queue.js';

/** How often the worker looks for retries and probes that came due, says it is alive, and looks for dead workers' jobs. */
const POLL_MS = 1000;
/**
 * A worker silent this long is taken for dead, its jobs given back. Far above POLL_MS, so that a
 * live worker slowed down is not taken for dead.
 */
const SILENCE_SECONDS = 10;

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
  /** The id this worker's jobs carry, and its row in `payment_workers`. */
  private readonly id = randomUUID();
  private readonly running = new Map<string, Promise<void>>();
  private taking: Promise<void> | null = null;
  private wanted = false;
  /** A sweep came due while a take was under way: it runs with the next one. */
  private sweepWanted = false;
  private stopped = false;
  private poller: NodeJS.Timeout | undefined;

  constructor(
    private readonly database: DatabaseHandle,
    private readonly queue: PaymentQueue,
    private readonly options: WorkerOptions,
    private readonly handle: (job: TakenJob) => Promise<void>,
  ) {}

  async start(): Promise<void> {
    // Alive before the first take: another worker's sweep would otherwise give its jobs back.
    await this.sweep();
    await this.queue.refreshStatistics();
    await this.queue.onNewWork(() => this.wake());
    this.poller = setInterval(() => this.wake(true), POLL_MS);
    this.wake();
  }

  /** Takes jobs while there are free slots and due jobs; called again by whatever may have changed that. */
  wake(sweep = false): void {
    if (this.stopped) return;
    if (this.taking) {
      this.wanted = true;
      this.sweepWanted ||= sweep;
      return;
    }
    this.taking = this.fill(sweep)
      .catch((error) => this.options.log.error({ err: error }, 'payment requests not taken: trying again shortly'))
      .finally(() => {
        this.taking = null;
        if (this.wanted) {
          const sweepNow = this.sweepWanted;
          this.wanted = false;
          this.sweepWanted = false;
          this.wake(sweepNow);
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

  /** Says this worker is alive, and gives back dead workers' jobs and its own unrecorded ones. */
  private async sweep(): Promise<void> {
    await this.database.executeSql(
      `insert into payment_workers (id, seen_at) values ($1, now())
         on conflict (id) do update set seen_at = now()`,
      [this.id],
    );
    const reclaimed = await this.queue.reclaim(this.id, [...this.running.keys()], SILENCE_SECONDS);
    if (reclaimed > 0) this.options.log.warn({ jobs: reclaimed }, 'payment requests of a stopped worker taken back');
  }

  /** Takes no more jobs, lets those under way finish (up to `timeoutMs`), then says it is gone. */
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
    // Jobs still under way (their answer late) are given back at once by the next worker's sweep.
    await this.database
      .executeSql('delete from payment_workers where id = $1', [this.id])
      .catch((error) => this.options.log.warn({ err: error }, 'payment worker not unregistered'));
  }
}
