// What operators scrape (`GET /metrics` on the admin listener, Prometheus text format). Labels
// are bounded sets only: listener, route template, method, status, outcome, cache name. Never an
// id, a key or a URL, so the number of series stays fixed whatever the traffic.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { CacheCounts } from './cache.js';

/** Live traffic, or test traffic (test credentials): series about payments carry it as `mode`. */
type ModeLabel = 'live' | 'test';

interface MetricSources {
  /** Payment requests waiting for an attempt, and the age of the oldest, per invoice mode. */
  paymentBacklog(): Promise<Record<ModeLabel, { waiting: number; oldestAgeSeconds: number }>>;
  /** Tenants whose live payment endpoint breaker is open or half-open (test endpoints have none). */
  openBreakers(): Promise<number>;
  /** Database connections busy with a query, and queries waiting for one. */
  databasePool(): { size: number; inUse: number; waiting: number };
  /** Statements and transactions abandoned at the request deadline so far. */
  databaseDeadlinesExceeded(): number;
  /** Whether /readyz would answer 200 now (the database reachable and writable). */
  ready(): Promise<boolean>;
  /** Look-ups of each in-process cache so far, by cache name. */
  cacheStatistics(): ReadonlyMap<string, Readonly<CacheCounts>>;
}

/**
 * Sets a gauge read from the database; when the database cannot answer, leaves its series out of
 * the scrape (an unlabelled gauge, always shown, says NaN: not known). The scrape still succeeds,
 * with `service_ready` 0, so the alert that fires says what is wrong, not that the process is down.
 */
async function orLeftOut(gauge: Gauge, read: () => Promise<void>, labelled = true): Promise<void> {
  try {
    await read();
  } catch {
    gauge.reset();
    if (!labelled) gauge.set(Number.NaN);
  }
}

export class Metrics {
  readonly registry = new Registry();

  readonly requestDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer a request, by listener, route template, method and status',
    labelNames: ['listener', 'route', 'method', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  readonly paymentNotifications = new Counter({
    name: 'payment_notifications_total',
    help:
      'Payment callbacks by outcome (success, duplicate, or the error message answered) and mode of the key ' +
      '(live, test; none when no key was valid)',
    labelNames: ['outcome', 'mode'] as const,
    registers: [this.registry],
  });

  readonly unknownStatusNotifications = new Counter({
    name: 'payment_notifications_unknown_status_total',
    help: 'Payment callbacks stored and answered success whose status is not paid, failed, cancelled or refunded: unknown status, not applied',
    labelNames: ['mode'] as const,
    registers: [this.registry],
  });

  readonly possibleDoubleCharges = new Counter({
    name: 'payment_notifications_possible_double_charge_total',
    help:
      'Payment callbacks stored and answered success but not applied: a paid for an invoice already paid under ' +
      'another transaction_id (the traveller may have paid twice), by mode',
    labelNames: ['mode'] as const,
    registers: [this.registry],
  });

  readonly refusedNotificationRecords = new Counter({
    name: 'refused_notification_records_total',
    help: 'Refused payment callbacks of authenticated tenants by what became of their record: dropped (writer behind), failed (database away), pruned',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly paymentRequestAttempts = new Counter({
    name: 'payment_request_attempts_total',
    help: 'Outbound payment request attempts by outcome (delivered, retrying or failed) and invoice mode (live, test)',
    labelNames: ['outcome', 'mode'] as const,
    registers: [this.registry],
  });

  readonly paymentRequestWait = new Histogram({
    name: 'payment_request_first_attempt_delay_seconds',
    help: "Time from the invoice's transaction to the first attempt of its payment request, by invoice mode",
    labelNames: ['mode'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [this.registry],
  });

  readonly paymentRequestDuration = new Histogram({
    name: 'payment_request_attempt_duration_seconds',
    help: 'Duration of payment request attempts by kind (success, http_error, timeout, network_error, not_sent) and invoice mode',
    labelNames: ['kind', 'mode'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
    registers: [this.registry],
  });

  readonly paymentRequestsInFlight = new Gauge({
    name: 'payment_requests_in_flight',
    help: "Payment requests this process's places hold now: in flight, next, or being recorded",
    registers: [this.registry],
  });

  readonly rateLimited = new Counter({
    name: 'rate_limited_requests_total',
    help: 'Requests answered 429, by listener and limit (credential, auth_failures, or a route budget: test_invoices, pings)',
    labelNames: ['listener', 'limit'] as const,
    registers: [this.registry],
  });

  readonly rateLimitStoreFailures = new Counter({
    name: 'rate_limit_store_failures_total',
    help: 'Redis commands of the rate limits that failed or timed out (reason: error or timeout)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly rateLimitStoreDegraded = new Gauge({
    name: 'rate_limit_store_degraded',
    help: '1 while Redis does not answer and the rate limits are counted in this process, else 0',
    registers: [this.registry],
  });

  constructor(sources: MetricSources) {
    collectDefaultMetrics({ register: this.registry });
    // At 0 from the start: an alert on its increase sees the first one (a series born at 1 shows none).
    for (const mode of ['live', 'test']) this.possibleDoubleCharges.inc({ mode }, 0);
    const registers = [this.registry];
    new Gauge({
      name: 'payment_requests_waiting',
      help: 'Payment requests not yet attempted or waiting for a retry, by invoice mode',
      labelNames: ['mode'] as const,
      registers,
      async collect() {
        await orLeftOut(this, async () => {
          for (const [mode, backlog] of Object.entries(await sources.paymentBacklog())) {
            this.set({ mode }, backlog.waiting);
          }
        });
      },
    });
    // Read by a collect of its own: the registry collects its metrics at once, so one set by the
    // other's collect would show the previous scrape's value (none at the first).
    new Gauge({
      name: 'payment_requests_oldest_waiting_seconds',
      help: 'Age of the oldest payment request still waiting (0 when none), by invoice mode',
      labelNames: ['mode'] as const,
      registers,
      async collect() {
        await orLeftOut(this, async () => {
          for (const [mode, backlog] of Object.entries(await sources.paymentBacklog())) {
            this.set({ mode }, backlog.oldestAgeSeconds);
          }
        });
      },
    });
    new Gauge({
      name: 'payment_endpoint_breakers_open',
      help: 'Live payment endpoints whose circuit breaker is open or half-open: their requests wait for a probe (test endpoints have no breaker)',
      registers,
      async collect() {
        await orLeftOut(this, async () => this.set(await sources.openBreakers()), false);
      },
    });
    new Gauge({
      name: 'db_pool_connections',
      help: 'Database connections by state (size, in_use) and queries waiting for one (waiting)',
      labelNames: ['state'] as const,
      registers,
      collect() {
        const pool = sources.databasePool();
        this.set({ state: 'size' }, pool.size);
        this.set({ state: 'in_use' }, pool.inUse);
        this.set({ state: 'waiting' }, pool.waiting);
      },
    });
    new Counter({
      name: 'db_request_deadline_exceeded_total',
      help:
        'Database statements and transactions not answered within DATABASE_REQUEST_TIMEOUT_MS (connection wait ' +
        'included): abandoned, their requests answered 503 with Retry-After',
      registers,
      collect() {
        this.reset();
        this.inc(sources.databaseDeadlinesExceeded());
      },
    });
    // What alerts on readiness read (deploy/prometheus/alerts.yml): /readyz itself is for load balancers.
    new Gauge({
      name: 'service_ready',
      help: '1 when the service is ready (its database reachable and writable), 0 when /readyz answers 503',
      registers,
      async collect() {
        this.set((await sources.ready()) ? 1 : 0);
      },
    });
    new Counter({
      name: 'cache_requests_total',
      help: 'In-process cache look-ups by cache and result (hit or miss), since the process started',
      labelNames: ['cache', 'result'] as const,
      registers,
      collect() {
        this.reset();
        for (const [cache, counts] of sources.cacheStatistics()) {
          this.inc({ cache, result: 'hit' }, counts.hits);
          this.inc({ cache, result: 'miss' }, counts.misses);
        }
      },
    });
  }
}
