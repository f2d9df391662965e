// Runs payment requests from places in their endpoints' windows (docs/payment-delivery.md,
// "Places"): up to `concurrency` places at once, each with one request in flight to its endpoint
// at a time, the next one leaving at the previous one's answer while that one is recorded. New
// places are taken as soon as one ends, as soon as a request is asked for (this process's own
// invoices are announced in the process, other processes' by NOTIFY), and every POLL_MS for
// retries and probes coming due. Each request is held under a lease this worker renews while its
// place holds it (requests.ts); deliver.ts makes each attempt.
import { randomUUID } from 'node:crypto';
import { unavailability } from '../../db/errors.js';
import type { Logger } from '../../logger.js';
import { inSpan, outsideAnySpan, recordSpan } from '../../tracing.js';
import type { HandOver, PaymentRequests, TakeLimits, TakenRequest } from './requests.js';

/** How often the worker looks for retries and probes that came due, renews its leases, and moves release 1.0.0's jobs. */
const POLL_MS = 1000;
/**
 * A lease not renewed for this long ends: its request is due again. Far above POLL_MS, so that a
 * live worker slowed down keeps what it holds.
 */
const LEASE_SECONDS = 10;
/** Requests a place is taken with at most: the one in flight and the next, ready at its answer. */
const TAKEN_DEPTH = 2;
/**
 * Requests a place is brought to at most by its delivered attempts' handovers, while its endpoint
 * answers it that many times within HELD_MS: deep enough that a place has its next requests while
 * its earlier answers are being recorded, even from an endpoint that answers at once
 * (docs/payment-delivery.md, "Places").
 */
const MAX_DEPTH = 16;
/**
 * About how long a place's requests take its endpoint: a slow endpoint's place holds no more than
 * TAKEN_DEPTH, so that it ends soon and a full worker's take, which is tenant-fair, gets it back.
 */
const HELD_MS = 200;

/** The depth a place is brought to when its endpoint took `turnMs` for a request. */
const placeDepthFor = (turnMs: number) =>
  Math.min(MAX_DEPTH, Math.max(TAKEN_DEPTH, Math.floor(HELD_MS / Math.max(turnMs, 1))));

export interface WorkerOptions {
  /** PAYMENT_WORKER_CONCURRENCY: places (requests in flight) in this process. */
  concurrency: number;
  /** PAYMENT_ENDPOINT_CONCURRENCY. */
  perEndpoint: number;
  giveUpAfterSeconds: number;
  /** PAYMENT_JOB_TIMEOUT_SECONDS: how long a probe holds its breaker half-open. */
  probeSeconds: number;
  log: Logger;
  /** Told when the number of requests this process holds changes. */
  onInFlight?: (count: number) => void;
}

/** A place in an endpoint's window: its requests go one at a time, in the order it got them. */
interface Place {
  /** Its name: the lease holder of its requests. */
  holder: string;
  /** Taken or handed over, waiting for the one in flight to be answered. */
  next: TakenRequest[];
  /** One of its requests is in flight: sent, not yet answered. */
  sending: boolean;
  /** Its attempts not yet recorded, the one in flight included. */
  unrecorded: number;
  /** Requests its recordings under way have asked to be handed. */
  asked: number;
  /**
   * Its endpoint failed an attempt: it sends nothing more, and gives back what it holds once its
   * attempts are recorded, as every place of a stopping worker does.
   */
  closing: boolean;
  /** It is giving back what it holds: then it ends. */
  ending: boolean;
}

export class PaymentWorker {
  /** Names its places, `<id>#<number>`. */
  private readonly id = randomUUID();
  private readonly places = new Map<string, Place>();
  /** How many places it has named: none is named twice. */
  private placesNamed = 0;
  /** The invoices of the requests its places hold: the leases it renews. */
  private readonly held = new Set<string>();
  private taking: Promise<void> | null = null;
  private wanted = false;
  /** A sweep came due while a take was under way: it runs with the next one. */
  private sweepWanted = false;
  private stopped = false;
  /** Resolves the stop's wait once the last place has ended. */
  private lastPlaceEnded: (() => void) | null = null;
  private poller: NodeJS.Timeout | undefined;

  constructor(
    private readonly requests: PaymentRequests,
    private readonly options: WorkerOptions,
    private readonly deliver: (
      request: TakenRequest,
      answered: (failing: boolean) => HandOver | null,
    ) => Promise<TakenRequest[]>,
  ) {}

  async start(): Promise<void> {
    await this.sweep();
    await this.requests.refreshStatistics();
    await this.requests.onNewWork(() => this.wake());
    this.poller = setInterval(() => this.wake(true), POLL_MS);
    this.wake();
  }

  /** Takes places while there are free ones and due requests; called again by whatever may have changed that. */
  wake(sweep = false): void {
    if (this.stopped) return;
    if (this.taking) {
      this.wanted = true;
      this.sweepWanted ||= sweep;
      return;
    }
    // Woken by an invoice's request or a place ending, it takes for every trace: for none of them.
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
    const limits: Omit<TakeLimits, 'places' | 'firstPlace'> = {
      perEndpoint: this.options.perEndpoint,
      placeDepth: TAKEN_DEPTH,
      giveUpAfterSeconds: this.options.giveUpAfterSeconds,
      worker: this.id,
      leaseSeconds: LEASE_SECONDS,
      probeSeconds: this.options.probeSeconds,
    };
    while (!this.stopped) {
      const free = this.options.concurrency - this.places.size;
      if (free <= 0) return;
      const firstPlace = this.placesNamed;
      this.placesNamed += free;
      const takeStarted = Date.now();
      const taken = await this.requests.take({ ...limits, places: free, firstPlace });
      const opened: Place[] = [];
      for (const request of taken) {
        // One take serves many invoices: each taken request's trace gets a span of it.
        recordSpan(
          'payment request take',
          { parent: request.traceparent, attributes: spanAttributes(request) },
          takeStarted,
        );
        let place = this.places.get(request.holder);
        if (!place) {
          place = {
            holder: request.holder,
            next: [],
            sending: false,
            unrecorded: 0,
            asked: 0,
            closing: false,
            ending: false,
          };
          this.places.set(place.holder, place);
          opened.push(place);
        }
        this.hold(place, request);
      }
      this.options.onInFlight?.(this.held.size);
      for (const place of opened) this.advance(place);
      if (opened.length < free) return;
    }
  }

  private hold(place: Place, request: TakenRequest): void {
    place.next.push(request);
    this.held.add(request.invoice.id);
  }

  /**
   * Sends the place's next request unless one is in flight; once its attempts are recorded and it
   * has nothing to send (or may send nothing more), gives back what it holds and ends.
   */
  private advance(place: Place): void {
    if (place.sending) return;
    const request = place.closing || this.stopped ? undefined : place.next.shift();
    if (request) {
      this.send(place, request);
    } else if (place.unrecorded === 0 && !place.ending) {
      place.ending = true;
      void this.giveBack(place).then(() => {
        this.places.delete(place.holder);
        // A place that ends gives the take room: one that goes on does not.
        if (this.stopped) {
          if (this.places.size === 0) this.lastPlaceEnded?.();
        } else {
          this.wake();
        }
      });
    }
  }

  /**
   * Makes the requests the place holds unsent due again, for any worker's take. Never rejects: what
   * could not be given back is due again when its lease ends.
   */
  private async giveBack(place: Place): Promise<void> {
    const unsent = place.next.splice(0).map((request) => request.invoice.id);
    if (unsent.length === 0) return;
    try {
      await this.requests.giveBack(place.holder, unsent);
    } catch (error) {
      this.options.log.warn(
        { err: error, requests: unsent.length },
        'payment requests not given back: due at their lease end',
      );
    }
    for (const invoiceId of unsent) this.held.delete(invoiceId);
    this.options.onInFlight?.(this.held.size);
  }

  private send(place: Place, request: TakenRequest): void {
    const invoiceId = request.invoice.id;
    place.sending = true;
    place.unrecorded += 1;
    let inFlight = true;
    const sentAt = Date.now();
    let answeredAt = 0;
    let asked = 0;
    const answered = (failing: boolean): HandOver | null => {
      answeredAt = Date.now();
      inFlight = false;
      place.sending = false;
      // A failing endpoint gets none of the place's next requests: they go back to the take, which
      // sends them to it while its breaker lets it.
      place.closing ||= failing;
      // The place's next request leaves now, while this one is recorded.
      this.advance(place);
      // A delivered attempt hands its row on while this process has room for another place: when
      // it has none, the row goes back to the take, which is tenant-fair. It asks for what brings
      // the place to the depth its endpoint's answer allows: the requests answered are all on their
      // way out.
      if (place.closing || this.stopped || this.places.size >= this.options.concurrency) return null;
      const depth = placeDepthFor(answeredAt - sentAt);
      asked = Math.max(0, depth - place.next.length - (place.sending ? 1 : 0) - place.asked);
      place.asked += asked;
      return asked > 0 ? { requests: asked, leaseSeconds: LEASE_SECONDS } : null;
    };
    // Every attempt, retries and resends included, continues the trace of the invoice's creation.
    const attempt = { parent: request.traceparent, attributes: spanAttributes(request) };
    inSpan('payment request attempt', attempt, () => this.deliver(request, answered))
      .then((handedTo) => {
        for (const handed of handedTo) {
          recordSpan(
            'payment request take',
            { parent: handed.traceparent, attributes: spanAttributes(handed) },
            answeredAt,
          );
          this.hold(place, handed);
        }
      })
      .catch((error) => {
        // Its outcome could not be recorded (database away, a bug): once its lease has ended, the
        // next sweep that reaches the database makes it due again.
        this.options.log.error({ err: error, invoice_id: invoiceId }, 'payment request left to retry');
      })
      .then(() => {
        place.unrecorded -= 1;
        place.asked -= asked;
        // Never answered: not sent (an invoice settled meanwhile), or the attempt failed before.
        if (inFlight) place.sending = false;
        this.held.delete(invoiceId);
        this.options.onInFlight?.(this.held.size);
        this.advance(place);
      });
  }

  /**
   * Renews the leases of what runs here, gives back what nobody holds any more (ended leases: a
   * stopped worker's, and attempts whose outcome could not be recorded), and moves release
   * 1.0.0's waiting jobs in.
   */
  private async sweep(): Promise<void> {
    const released = await this.requests.renewLeases(this.id, [...this.held], LEASE_SECONDS);
    if (released > 0) this.options.log.warn({ requests: released }, 'payment requests of a stopped worker taken back');
    const moved = await this.requests.moveFromPgBoss(LEASE_SECONDS);
    if (moved > 0) this.options.log.info({ requests: moved }, "payment requests moved from release 1.0.0's queue");
  }

  /**
   * Takes no more places; those it has finish the requests in flight and give back the rest (up to
   * `timeoutMs`).
   */
  async stop(timeoutMs: number): Promise<void> {
    this.stopped = true;
    clearInterval(this.poller);
    await this.taking;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.lastPlaceEnded = resolve;
      if (this.places.size === 0) resolve();
      timer = setTimeout(resolve, timeoutMs);
    });
    clearTimeout(timer);
    // Requests still held (an answer late) are given back when their lease ends.
  }
}

/** What a payment request's spans say of it. */
const spanAttributes = (request: TakenRequest) => ({
  'payment_request.invoice_id': request.invoice.id,
  'payment_request.attempt': request.attempt,
});
