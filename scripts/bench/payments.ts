// Payment request delivery (issue 26): invoices created through the admin API of a service with its
// worker on, their signed requests received by partner endpoints in this process (one answers 200
// at once, one never answers, one answers 500). Latency is from the invoice's 201 (its transaction
// has committed) to the partner's receipt, on this machine's clock. The ceiling: bare-sender.ts
// POSTing the same signed bodies to the same endpoint, in alternating slices.
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { signatureHeader } from '../../src/payments/delivery/sign.js';
import {
  type AdminClient,
  BENCH_DIR,
  cpuSecondsOf,
  inParallel,
  machineBusySeconds,
  postgresCpuSeconds,
  run,
} from './lib.js';

export const PAYMENT_SCENARIOS = {
  idle: 'payment requests: idle',
  burst: 'payment requests: burst',
  isolation: 'payment requests: isolation',
  drain: 'payment requests: drain',
} as const;

/** Enough that the p99 is not the single slowest invoice, one stall of the machine. */
const IDLE_INVOICES = 200;
export const BURST_INVOICES = 2000;
const ISOLATION_WAITING = 200;
const SLICES = 5;
/** Drains, each beside the bare sender's: a single one's share of it varies widely from run to run. */
const DRAIN_ROUNDS = 5;
/** Invoice creations in flight at once during the burst: as fast as the admin API allows. */
const CREATION_CONNECTIONS = 10;
export const TARGETS = {
  idleP99Ms: { postgres: 50, embedded: 100 },
  burstP99Ms: 1000,
  drainShareOfBare: 0.5,
};

const now = () => performance.timeOrigin + performance.now();

/** Partner endpoints: `/ok` answers 200 with a payment_url, `/hang` never answers, `/fail` answers 500. */
class PartnerEndpoints {
  readonly receivedAt = new Map<string, number>();
  private waiters = new Map<string, () => void>();
  private readonly server = http.createServer((request, response) => {
    const id = String(request.headers['webhook-id']);
    request.resume();
    request.on('end', () => {
      if (request.url === '/ok') {
        this.receivedAt.set(id, now());
        this.waiters.get(id)?.();
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end('{"payment_url":"https://pay.example.com/session"}');
      } else if (request.url === '/fail') {
        response.writeHead(500).end();
      }
    });
  });
  url = '';

  async start(): Promise<void> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Resolves when `webhookId` has arrived at `/ok`. */
  arrival(webhookId: string): Promise<number> {
    const at = this.receivedAt.get(webhookId);
    if (at !== undefined) return Promise.resolve(at);
    return new Promise((resolve) => {
      this.waiters.set(webhookId, () => {
        this.waiters.delete(webhookId);
        resolve(this.receivedAt.get(webhookId)!);
      });
    });
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

interface Tenant {
  id: string;
  secret: string;
}

async function tenantAt(admin: AdminClient, slug: string, endpoint: string): Promise<Tenant> {
  const { tenant, credentials } = await admin.request<{
    tenant: { id: string };
    credentials: { payment_endpoint_secret: string };
  }>('POST', '/tenants', { name: slug, slug, gateway: 'tap' });
  await admin.request('PATCH', `/tenants/${tenant.id}`, { payment_endpoint_url: endpoint });
  return { id: tenant.id, secret: credentials.payment_endpoint_secret };
}

/** Creates an invoice; its id and when its 201 came. */
async function invoiceFor(admin: AdminClient, tenant: Tenant): Promise<{ id: string; committedAt: number }> {
  const { invoice } = await admin.request<{ invoice: { id: string } }>('POST', '/invoices', {
    tenant_id: tenant.id,
    amount: '100.00',
    currency: 'SAR',
  });
  return { id: invoice.id, committedAt: now() };
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
};

export interface Distribution {
  p50: number;
  p99: number;
}
const distribution = (values: number[]): Distribution => ({ p50: percentile(values, 50), p99: percentile(values, 99) });

/** The bare sender's run of `count` signed bodies like the service's; latency of each, and the rate. */
async function bareSlice(
  endpoints: PartnerEndpoints,
  tenant: Tenant,
  workDir: string,
  label: string,
  count: number,
  concurrency: number,
  connections: 'kept-connections' | 'new-connections' = 'kept-connections',
): Promise<{ latencies: number[]; perSecond: number; machineCpuUs: number }> {
  const timestamp = Math.floor(Date.now() / 1000);
  const requests = Array.from({ length: count }, (_, index) => {
    const id = `msg_bare-${label}-${index}`;
    const body = JSON.stringify({
      type: 'payment.requested',
      invoice_id: `bare-${label}-${index}`,
      amount: '100.00',
      currency: 'SAR',
      gateway: 'tap',
      trip_id: null,
      notify_url: 'http://127.0.0.1/api/v1/payments/notify/',
      created_at: new Date().toISOString(),
    });
    return {
      url: `${endpoints.url}/ok`,
      headers: {
        'user-agent': 'partner-integrations (payment request)',
        'webhook-id': id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader([tenant.secret], id, timestamp, body),
      },
      body,
    };
  });
  const file = path.join(workDir, `bare-${label}.json`);
  writeFileSync(file, JSON.stringify(requests));
  const { stdout } = await run(process.execPath, [
    '--import',
    'tsx',
    path.join(BENCH_DIR, 'bare-sender.ts'),
    file,
    String(concurrency),
    connections,
  ]);
  const { sentAt, machineBusySeconds } = JSON.parse(stdout) as {
    sentAt: Record<string, number>;
    machineBusySeconds: number;
  };
  const ids = Object.keys(sentAt);
  const arrivals = ids.map((id) => endpoints.receivedAt.get(id)!);
  const latencies = ids.map((id, index) => arrivals[index] - sentAt[id]);
  const first = Math.min(...Object.values(sentAt));
  return {
    latencies,
    perSecond: count / ((Math.max(...arrivals) - first) / 1000),
    machineCpuUs: (machineBusySeconds * 1e6) / count,
  };
}

/** One invoice at a time, each after the last one's receipt: 201 → receipt. */
async function oneAtATime(admin: AdminClient, endpoints: PartnerEndpoints, tenant: Tenant, count: number) {
  const latencies: number[] = [];
  for (let index = 0; index < count; index++) {
    const { id, committedAt } = await invoiceFor(admin, tenant);
    latencies.push(Math.max(0, (await endpoints.arrival(`msg_${id}`)) - committedAt));
  }
  return latencies;
}

export interface PaymentFigures {
  idle?: { service: Distribution; bare: Distribution };
  burst?: {
    createdPerSecond: number;
    deliveredPerSecond: number;
    service: Distribution;
    barePerSecond: number;
    /** From the last invoice's 201 to the last receipt: how far delivery fell behind creation. */
    lagMs: number;
  };
  isolation?: { service: Distribution };
  /** The drain's round of median share, its backlog, and every round's share of the bare sender's rate. */
  drain?: DrainRound & { invoices: number; shares: number[] };
}

/**
 * Invoices enqueued with no worker running, then the service started with it: how fast it empties
 * the queue once it delivers, the bare sender's rate for as many, and the time to the first receipt.
 */
interface DrainRound {
  perSecond: number;
  barePerSecond: number;
  startMs: number;
  /** CPU per request received, from the service's readiness on: the service's, PostgreSQL's, the whole machine's. */
  cpuUs: { service: number; postgres: number; machine: number };
  /** The whole machine's CPU per request of the bare sender's, for as many. */
  bareMachineCpuUs: number;
  /** The bare sender's rate with a new connection each: the ceiling of runs before the worker kept its connections. */
  bareNewConnectionsPerSecond: number;
}

export async function measurePayments(
  admin: AdminClient,
  workDir: string,
  selected: (label: string) => boolean,
  perEndpoint: number,
  /** Starts the service again, with its payment worker or without; its pid. */
  restart: (worker: boolean) => Promise<number>,
  /** Invoices the drain enqueues: more of them, and the service's start weighs less. */
  drainInvoices: number,
): Promise<PaymentFigures> {
  const endpoints = new PartnerEndpoints();
  await endpoints.start();
  const figures: PaymentFigures = {};
  const log = (line: string) => console.error(line);
  try {
    const healthy = await tenantAt(admin, 'bench-pay-healthy', `${endpoints.url}/ok`);
    if (selected(PAYMENT_SCENARIOS.idle)) {
      log(`- ${PAYMENT_SCENARIOS.idle}`);
      const service: number[] = [];
      const bare: number[] = [];
      for (let slice = 0; slice < SLICES; slice++) {
        service.push(...(await oneAtATime(admin, endpoints, healthy, IDLE_INVOICES / SLICES)));
        bare.push(
          ...(await bareSlice(endpoints, healthy, workDir, `idle${slice}`, IDLE_INVOICES / SLICES, 1)).latencies,
        );
      }
      figures.idle = { service: distribution(service), bare: distribution(bare) };
      log(
        `  p50 ${figures.idle.service.p50.toFixed(1)} ms, p99 ${figures.idle.service.p99.toFixed(1)} ms (bare p99 ${figures.idle.bare.p99.toFixed(1)} ms)`,
      );
    }
    if (selected(PAYMENT_SCENARIOS.burst)) {
      log(`- ${PAYMENT_SCENARIOS.burst}`);
      const burst = await tenantAt(admin, 'bench-pay-burst', `${endpoints.url}/ok`);
      const latencies: number[] = [];
      const created: number[] = [];
      const delivered: number[] = [];
      const bare: number[] = [];
      let lagMs = 0;
      const perSlice = BURST_INVOICES / SLICES;
      for (let slice = 0; slice < SLICES; slice++) {
        const started = now();
        const invoices = await inParallel(perSlice, CREATION_CONNECTIONS, () => invoiceFor(admin, burst));
        const lastCommit = Math.max(...invoices.map((invoice) => invoice.committedAt));
        const arrivals = await Promise.all(invoices.map((invoice) => endpoints.arrival(`msg_${invoice.id}`)));
        for (const [index, invoice] of invoices.entries())
          latencies.push(Math.max(0, arrivals[index] - invoice.committedAt));
        created.push(perSlice / ((lastCommit - started) / 1000));
        delivered.push(perSlice / ((Math.max(...arrivals) - started) / 1000));
        lagMs = Math.max(lagMs, Math.max(...arrivals) - lastCommit);
        bare.push((await bareSlice(endpoints, burst, workDir, `burst${slice}`, perSlice, perEndpoint)).perSecond);
      }
      const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
      figures.burst = {
        createdPerSecond: mean(created),
        deliveredPerSecond: mean(delivered),
        service: distribution(latencies),
        barePerSecond: mean(bare),
        lagMs,
      };
      log(
        `  created ${figures.burst.createdPerSecond.toFixed(0)}/s, delivered ${figures.burst.deliveredPerSecond.toFixed(0)}/s (bare ${figures.burst.barePerSecond.toFixed(0)}/s), p50 ${figures.burst.service.p50.toFixed(0)} ms, p99 ${figures.burst.service.p99.toFixed(0)} ms`,
      );
    }
    if (selected(PAYMENT_SCENARIOS.isolation)) {
      log(`- ${PAYMENT_SCENARIOS.isolation}`);
      const hung = await tenantAt(admin, 'bench-pay-hung', `${endpoints.url}/hang`);
      const failing = await tenantAt(admin, 'bench-pay-failing', `${endpoints.url}/fail`);
      await inParallel(ISOLATION_WAITING, CREATION_CONNECTIONS, () => invoiceFor(admin, hung));
      await inParallel(ISOLATION_WAITING, CREATION_CONNECTIONS, () => invoiceFor(admin, failing));
      figures.isolation = { service: distribution(await oneAtATime(admin, endpoints, healthy, IDLE_INVOICES)) };
      log(
        `  healthy tenant p50 ${figures.isolation.service.p50.toFixed(1)} ms, p99 ${figures.isolation.service.p99.toFixed(1)} ms`,
      );
    }
    if (selected(PAYMENT_SCENARIOS.drain)) {
      log(`- ${PAYMENT_SCENARIOS.drain}`);
      // The burst's deliveries are bounded by how fast invoices can be created; this is the worker's own rate.
      const drain = await tenantAt(admin, 'bench-pay-drain', `${endpoints.url}/ok`);
      const rounds: DrainRound[] = [];
      for (let round = 1; round <= DRAIN_ROUNDS; round++) {
        const measured = await drainRound(admin, endpoints, drain, workDir, perEndpoint, restart, drainInvoices, round);
        rounds.push(measured);
        log(
          `  round ${round}: ${measured.perSecond.toFixed(0)}/s (bare ${measured.barePerSecond.toFixed(0)}/s, with a new connection each ${measured.bareNewConnectionsPerSecond.toFixed(0)}/s), first receipt ${measured.startMs.toFixed(0)} ms after the start; ${drainCpu(measured)}`,
        );
      }
      const median = [...rounds].sort((one, other) => shareOf(one) - shareOf(other))[Math.floor(rounds.length / 2)];
      figures.drain = { ...median, invoices: drainInvoices, shares: rounds.map(shareOf) };
    }
  } finally {
    await endpoints.stop();
  }
  return figures;
}

/**
 * One drain: `count` invoices enqueued with no worker running, then the service started with it, then the
 * bare sender sending as many: their rates, the service's start, and the CPU each costs.
 */
async function drainRound(
  admin: AdminClient,
  endpoints: PartnerEndpoints,
  tenant: Tenant,
  workDir: string,
  perEndpoint: number,
  restart: (worker: boolean) => Promise<number>,
  count: number,
  round: number,
): Promise<DrainRound> {
  await restart(false);
  const invoices = await inParallel(count, CREATION_CONNECTIONS, () => invoiceFor(admin, tenant));
  const started = now();
  const pid = await restart(true);
  // CPU from the service's readiness on, against the requests received since.
  const readyAt = now();
  const cpuAtReady = { service: cpuSecondsOf(pid), postgres: postgresCpuSeconds(), machine: machineBusySeconds() };
  const arrivals = await Promise.all(invoices.map((invoice) => endpoints.arrival(`msg_${invoice.id}`)));
  const perReceived = 1e6 / arrivals.filter((at) => at >= readyAt).length;
  const cpuUs = {
    service: (cpuSecondsOf(pid) - cpuAtReady.service) * perReceived,
    postgres: (postgresCpuSeconds() - cpuAtReady.postgres) * perReceived,
    machine: (machineBusySeconds() - cpuAtReady.machine) * perReceived,
  };
  const first = Math.min(...arrivals);
  const bare = await bareSlice(endpoints, tenant, workDir, `drain${round}`, count, perEndpoint);
  const bareNew = await bareSlice(
    endpoints,
    tenant,
    workDir,
    `drain${round}-new`,
    count,
    perEndpoint,
    'new-connections',
  );
  // Measured as the bare sender is, from its first request's arrival: the process's start is apart.
  return {
    perSecond: (count - 1) / ((Math.max(...arrivals) - first) / 1000),
    startMs: first - started,
    cpuUs,
    barePerSecond: bare.perSecond,
    bareMachineCpuUs: bare.machineCpuUs,
    bareNewConnectionsPerSecond: bareNew.perSecond,
  };
}

const shareOf = (round: DrainRound) => round.perSecond / round.barePerSecond;

const drainCpu = ({ cpuUs, bareMachineCpuUs }: DrainRound) =>
  `CPU per delivery: the service's ${cpuUs.service.toFixed(0)} µs, PostgreSQL's ${cpuUs.postgres.toFixed(0)} µs, the whole machine's ${cpuUs.machine.toFixed(0)} µs against the bare sender's ${bareMachineCpuUs.toFixed(0)} µs`;

const percent = (share: number) => `${(share * 100).toFixed(0)}%`;

const verdict = (met: boolean) => (met ? '**met**' : '**MISSED**');
const ms = (value: number) => value.toFixed(value >= 100 ? 0 : 1);

/** BENCHMARKS.md's lines on payment requests, for `database` ('postgres' or 'embedded'). */
export function paymentLines(figures: PaymentFigures, database: 'postgres' | 'embedded', settings: string): string[] {
  const lines = [
    `## Payment requests (${database === 'postgres' ? 'PostgreSQL' : 'embedded database'})`,
    '',
    `Invoices through the admin API of the service with its worker on (${settings}); partner endpoints in the bench`,
    "process. Latency: the invoice's 201 (its transaction committed) to the partner's receipt. Ceiling: scripts/bench/",
    'bare-sender.ts POSTing the same signed bodies to the same endpoint on kept connections (as the worker), in',
    'alternating slices; for the drain, also with a new connection each (the ceiling of runs before the worker kept',
    'its connections).',
    '',
    '| scenario | service | bare sender | target |',
    '|---|---|---|---|',
  ];
  const { idle, burst, isolation } = figures;
  if (idle) {
    const target = TARGETS.idleP99Ms[database];
    lines.push(
      `| ${PAYMENT_SCENARIOS.idle}: ${IDLE_INVOICES} invoices one at a time | p50 ${ms(idle.service.p50)} ms, p99 ${ms(idle.service.p99)} ms | p50 ${ms(idle.bare.p50)} ms, p99 ${ms(idle.bare.p99)} ms | p99 < ${target} ms: ${verdict(idle.service.p99 < target)} |`,
    );
  }
  if (burst) {
    lines.push(
      `| ${PAYMENT_SCENARIOS.burst}: ${BURST_INVOICES} invoices, ${CREATION_CONNECTIONS} creations at once, one tenant | created ${burst.createdPerSecond.toFixed(0)}/s, delivered ${burst.deliveredPerSecond.toFixed(0)}/s (${((burst.deliveredPerSecond / burst.barePerSecond) * 100).toFixed(0)}% of bare); p50 ${ms(burst.service.p50)} ms, p99 ${ms(burst.service.p99)} ms; last receipt ${ms(burst.lagMs)} ms after the last 201 | ${burst.barePerSecond.toFixed(0)}/s | ≥ creation rate (within 5%): ${verdict(burst.deliveredPerSecond >= burst.createdPerSecond * 0.95)}; p99 < ${TARGETS.burstP99Ms} ms: ${verdict(burst.service.p99 < TARGETS.burstP99Ms)} |`,
    );
  }
  if (isolation) {
    const bound = idle
      ? `within 2× idle (${ms(idle.service.p99 * 2)} ms): ${verdict(isolation.service.p99 <= idle.service.p99 * 2)}`
      : '(idle not run)';
    lines.push(
      `| ${PAYMENT_SCENARIOS.isolation}: ${ISOLATION_WAITING} waiting for a hung endpoint, ${ISOLATION_WAITING} for a 500 one, then ${IDLE_INVOICES} of a healthy tenant one at a time | p50 ${ms(isolation.service.p50)} ms, p99 ${ms(isolation.service.p99)} ms | (idle's) | p99 ${bound} |`,
    );
  }
  if (figures.drain) {
    const { drain } = figures;
    lines.push(
      `| ${PAYMENT_SCENARIOS.drain}: ${drain.invoices} invoices enqueued with no worker, then the service started with it, one tenant; ${DRAIN_ROUNDS} rounds, each beside the bare sender's, the median's figures | ${drain.perSecond.toFixed(0)}/s from the first receipt to the last (${percent(shareOf(drain))} of bare; the rounds: ${drain.shares.map(percent).join(', ')}; ${percent(drain.perSecond / drain.bareNewConnectionsPerSecond)} of bare with a new connection each; first receipt ${ms(drain.startMs)} ms after the start; ${drainCpu(drain)}) | ${drain.barePerSecond.toFixed(0)}/s (a new connection each: ${drain.bareNewConnectionsPerSecond.toFixed(0)}/s) | ≥ ${percent(TARGETS.drainShareOfBare)} of bare: ${verdict(shareOf(drain) >= TARGETS.drainShareOfBare)} |`,
    );
  }
  return [...lines, ''];
}
