// Runs payment requests: up to `concurrency` at once, a new one taken as soon as a slot frees, as
// soon as one is asked for (this process's own invoices are announced in the process, other
// processes' by NOTIFY), and a look every POLL_MS for retries and probes coming due. Each request
// is held under a lease this worker renews while it runs (requests.ts); deliver.ts makes each attempt.
import { randomUUID } from 'node:crypto';
import { unavailability } from '../../db/errors.js';
import type { Logger } from '../../logger.js';
import { inSpan, outsideAnySpan, recordSpan } from '../../tracing.js';
import type { PaymentRequests, TakeLimits, TakenRequest } from './requests.js';

/** How often the worker looks for retries and probes that came due, renews its leases, and moves release 1.0.0's jobs. */
const POLL_MS = 1000;
/**
 * A lease not renewed for this long ends: its request is due again. Far above POLL_MS, so that a
 * live worker slowed down keeps what it holds.
 */
const LEASE_SECONDS = 10;

export interface WorkerOptions {
  /** PAYMENT_WORKER_CONCURRENCY: requests in flight in this process. */
  concurrency: number;
  /** PAYMENT_ENDPOINT_CONCURRENCY. */
  perEndpoint: number;
  giveUpAfterSeconds: number;
  /** PAYMENT_JOB_TIMEOUT_SECONDS: how long a probe holds its breaker half-open. */
  probeSeconds: number;
  log: Logger;
  /** Told when the number of requests in flight here changes. */
  onInFlight?: (count: number) => void;
}

export class PaymentWorker {
  /** The lease holder of what this worker takes. */
  private readonly id = randomUUID();
  private readonly running = new Map<string, Promise<void>>();
  private taking: Promise<void> | null = null;
  private wanted = false;
  /** A sweep came due while a take was under way: it runs with the next one. */
  private sweepWanted = false;
  private stopped = false;
  private poller: NodeJS.Timeout | undefined;

  constructor(
    private readonly requests: PaymentRequests,
    private readonly options: WorkerOptions,
    private readonly deliver: (
      worker: string,
      request: TakenRequest,
      nextLeaseSeconds: () => number | null,
    ) => Promise<TakenRequest | null>,
  ) {}

  async start(): Promise<void> {
    await this.sweep();
    await this.requests.refreshStatistics();
    await this.requests.onNewWork(() => this.wake());
    this.poller = setInterval(() => this.wake(true), POLL_MS);
    this.wake();
  }

  /** Takes requests while there are free slots and due requests; called again by whatever may have changed that. */
  wake(sweep = false): void {
    if (this.stopped) return;
    if (this.taking) {
      this.wanted = true;
      this.sweepWanted ||= sweep;
      return;
    }
    // Woken by an invoice's request or an attempt ending, it takes for every trace: for none of them.
    this.taking = outsideAnySpan(() => this.fill(sweep))
      .catch((error) => {
        // The database away is an outage the service rides out (as requests answer 503), not a bug.
        const level = unavailability(error) ? 'warn' : 'error';
        this.options.log[level]({ err: error }, 'payment requests not taken: trying again shortly');
      })
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
      leaseSeconds: LEASE_SECONDS,
      probeSeconds: this.options.probeSeconds,
    };
    while (!this.stopped) {
      const slots = this.options.concurrency - this.running.size;
      if (slots <= 0) return;
      const takeStarted = Date.now();
      const taken = await this.requests.take({ ...limits, slots });
      for (const request of taken) {
        // One take serves many invoices: each taken request's trace gets a span of it.
        recordSpan(
          'payment request take',
          { parent: request.traceparent, attributes: spanAttributes(request) },
          takeStarted,
        );
        this.run(request);
      }
      if (taken.length < slots) return;
    }
  }

  private run(request: TakenRequest): void {
    const invoiceId = request.invoice.id;
    // Every attempt, retries and resends included, continues the trace of the invoice's creation.
    const attempt = { parent: request.traceparent, attributes: spanAttributes(request) };
    let recordingStarted = 0;
    // A delivered attempt hands its place to the endpoint's next request while this process has
    // room for another: when it has none, the place goes back to the take, which is tenant-fair.
    const nextLeaseSeconds = () => {
      recordingStarted = Date.now();
      return !this.stopped && this.running.size < this.options.concurrency ? LEASE_SECONDS : null;
    };
    const done = inSpan('payment request attempt', attempt, () => this.deliver(this.id, request, nextLeaseSeconds))
      .then((handedTo) => {
        // Handed over as the worker stopped: given back when its lease ends, as one under way at the stop.
        if (!handedTo || this.stopped) return false;
        recordSpan(
          'payment request take',
          { parent: handedTo.traceparent, attributes: spanAttributes(handedTo) },
          recordingStarted,
        );
        this.run(handedTo);
        return true;
      })
      .catch((error) => {
        // Its outcome could not be recorded (database away, a bug): once its lease has ended, the
        // next sweep that reaches the database makes it due again.
        this.options.log.error({ err: error, invoice_id: invoiceId }, 'payment request left to retry');
        return false;
      })
      .then((handedOn) => {
        this.running.delete(invoiceId);
        this.options.onInFlight?.(this.running.size);
        // A place handed on frees no slot: only a place that ends gives the take something to fill.
        if (!handedOn) this.wake();
      });
    this.running.set(invoiceId, done);
    this.options.onInFlight?.(this.running.size);
  }

  /**
   * Renews the leases of what runs here, gives back what nobody holds any more (ended leases: a
   * stopped worker's, and attempts whose outcome could not be recorded), and moves release
   * 1.0.0's waiting jobs in.
   */
  private async sweep(): Promise<void> {
    const released = await this.requests.renewLeases(this.id, [...this.running.keys()], LEASE_SECONDS);
    if (released > 0) this.options.log.warn({ requests: released }, 'payment requests of a stopped worker taken back');
    const moved = await this.requests.moveFromPgBoss(LEASE_SECONDS);
    if (moved > 0) this.options.log.info({ requests: moved }, "payment requests moved from release 1.0.0's queue");
  }

  /** Takes no more requests, lets those under way finish (up to `timeoutMs`). */
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
    // Requests still under way (their answer late) are given back when their lease ends.
  }
}

/** What a payment request's spans say of it. */
const spanAttributes = (request: TakenRequest) => ({
  'payment_request.invoice_id': request.invoice.id,
  'payment_request.attempt': request.attempt,
});
