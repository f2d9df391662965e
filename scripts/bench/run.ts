// `npm run bench`: the hot paths of the service built for production, on PostgreSQL, over real
// HTTP from a separate client process, each beside a ceiling measured in the same run on the same
// machine (pgbench for the callback's SQL, a bare Fastify route for the read paths). Prints one
// markdown table and writes it to BENCHMARKS.md. Not a test: never part of `npm test`.
//
//   npm run bench -- [--duration 10] [--connections 10] [--warmup 2] [--profile] [--no-write] [--only TEXT]
//                    [--payment-database postgres|embedded|both] [--tracing] [--drain-invoices N]
//
// --only runs the scenarios whose label contains TEXT (the callback's half-rate line needs its
// unique scenario) and leaves BENCHMARKS.md alone: for trying a change, not for the record. Given
// more than once, it runs each one's scenarios, in one run: ratios of one run, on the same load.
// --tracing runs every service with OpenTelemetry on, every trace sampled and exported over
// OTLP/HTTP to a receiver in this process that reads and drops it: what tracing costs (BENCHMARKS.md
// is then left alone).
// --drain-invoices sets the backlog of the payment drain (more: the service's start weighs less);
// BENCHMARKS.md is then left alone.
// --profile runs the measured service under `node --cpu-prof` and keeps the .cpuprofile (its
// figures are skewed by the profiler, so BENCHMARKS.md is then left alone).
// BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) is used only to create
// and drop this run's databases. The payment request scenarios (payments.ts) run on a service of
// their own, with its worker, on a database of their own: PostgreSQL, then the embedded database in a
// fresh DATA_DIR (--payment-database picks one of them).
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { projectRoot } from '../../src/paths.js';
import {
  AdminClient,
  assertClean,
  BENCH_DIR,
  cpuSecondsOf,
  ensureWrk,
  freePort,
  heapUsedMb,
  type LoadResult,
  loadFromChild,
  machine,
  peakRss,
  peakRssSoFarMb,
  pgbench,
  postgresCpuSeconds,
  resetPeakRss,
  run,
  type ScenarioLoad,
  startChild,
  stopChild,
  ThrowawayDatabase,
  waitFor200,
} from './lib.js';
import { BURST_INVOICES, measurePayments, PAYMENT_SCENARIOS, paymentLines } from './payments.js';
import {
  CALLBACK_UNIQUE,
  callbackScenarios,
  createFixtures,
  createPgbenchFixtures,
  invoiceScenario,
  primeDuplicates,
  readScenarios,
  type Scenario,
  type Urls,
  uniqueCallbackAtRate,
} from './scenarios.js';

const { values: options } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    profile: { type: 'boolean', default: false },
    tracing: { type: 'boolean', default: false },
    'no-write': { type: 'boolean', default: false },
    only: { type: 'string', multiple: true },
    'payment-database': { type: 'string', default: 'both' },
    'drain-invoices': { type: 'string' },
  },
});
type PaymentDatabase = 'postgres' | 'embedded';
const PAYMENT_DATABASES: PaymentDatabase[] =
  options['payment-database'] === 'both' ? ['postgres', 'embedded'] : [options['payment-database'] as PaymentDatabase];
if (!PAYMENT_DATABASES.every((database) => ['postgres', 'embedded'].includes(database))) {
  throw new Error('--payment-database: postgres, embedded or both');
}
const DURATION_S = Number(options.duration);
const CONNECTIONS = Number(options.connections);
const WARMUP_S = Number(options.warmup);
/** The service's PostgreSQL pool (src/db/client.ts default): pgbench gets as many clients. */
const SERVICE_POOL_SIZE = 10;
const LOG_LEVEL = 'warn';
const TARGETS = { coldStartMs: 1500, npmStartMs: 3000, peakRssMb: 200, halfRateP99Ms: 20 };

const log = (line: string) => console.error(line);
const workDir = mkdtempSync(path.join(os.tmpdir(), 'partner-bench-'));
const profileDir = options.profile ? mkdtempSync(path.join(os.tmpdir(), 'partner-bench-profile-')) : null;
const MAINTENANCE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const database = new ThrowawayDatabase(MAINTENANCE_URL);
const cleanups: (() => Promise<void>)[] = [];

async function cleanUp(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch((error) => log(`cleanup: ${error}`));
  rmSync(workDir, { recursive: true, force: true });
}
process.once('SIGINT', () => void cleanUp().then(() => process.exit(130)));

async function build(): Promise<void> {
  log('building (npm run build)');
  const result = await run('npm', ['run', 'build', '--silent'], { allowFailure: true });
  if (result.code !== 0) {
    // tsc emits despite type errors; a service that does not start fails the run below anyway.
    log(
      `WARNING: npm run build reported errors; dist/ was emitted and is benchmarked as is:\n${result.stdout}${result.stderr}`,
    );
  }
  if (!existsSync(path.join(projectRoot, 'dist/src/cli/partnerctl.js')))
    throw new Error('the build produced no dist/src/cli/partnerctl.js');
}

interface Service {
  pid: number;
  urls: Urls;
  readyMs: number;
  stop(): Promise<void>;
}

/** Node flags of the built service as `npm start` (through `npm run serve`) runs it, plus BENCH_NODE_FLAGS to try others. */
const SERVICE_NODE_FLAGS = [
  ...serveScriptNodeFlags(),
  ...(process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean),
];

function serveScriptNodeFlags(): string[] {
  const serve: string = JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')).scripts.serve;
  return (
    serve
      .match(/\bnode ((?:--\S+ )*)dist\//)?.[1]
      .split(' ')
      .filter(Boolean) ?? []
  );
}

/** The service started last: when the bench fails, its state and last output say whether it was the cause. */
const latest: { service: ReturnType<typeof startChild> | null } = { service: null };

/** The built service, or with `npm` what `npm start` runs (the incremental build included). */
async function startService(
  env: NodeJS.ProcessEnv,
  urls: Urls,
  how: { nodeFlags: string[] } | 'npm start',
): Promise<Service> {
  const started = performance.now();
  const child =
    how === 'npm start'
      ? startChild('npm', ['start', '--silent'], env, true)
      : startChild(
          process.execPath,
          [...SERVICE_NODE_FLAGS, ...how.nodeFlags, 'dist/src/cli/partnerctl.js', 'serve'],
          env,
        );
  const stop = () => stopChild(child);
  cleanups.push(stop);
  latest.service = child;
  try {
    // The admin listener starts last: when it is ready, all three are.
    const readyMs = await waitFor200(`${urls.admin}/readyz`, child, started);
    return { pid: child.pid!, urls, readyMs, stop };
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${child.tail()}`);
  }
}

async function startBareServer(scenarios: Scenario[]): Promise<{ url: string; pid: number }> {
  const routes = scenarios.flatMap(({ ceiling }) =>
    ceiling.kind === 'bare'
      ? [
          {
            path: ceiling.path.split('?')[0],
            contentType: ceiling.contentType,
            bodyBase64: ceiling.body.toString('base64'),
          },
        ]
      : [],
  );
  const routesFile = path.join(workDir, 'bare-routes.json');
  writeFileSync(routesFile, JSON.stringify(routes));
  const port = await freePort();
  const child = startChild(
    process.execPath,
    ['--import', 'tsx', path.join(BENCH_DIR, 'bare.ts'), routesFile, String(port)],
    process.env,
  );
  cleanups.push(() => stopChild(child));
  const url = `http://127.0.0.1:${port}`;
  const pid = child.pid!;
  if (routes.length > 0) await waitFor200(`${url}${routes[0].path}`, child, performance.now(), 30_000);
  return { url, pid };
}

/**
 * Loads the bare server's routes, in turn, for as long as one scenario runs, before any is measured.
 * A process that has just started (a small heap, nothing collected yet) answers faster than one
 * that has run a while: the service has by then, and so has the bare server by every scenario but
 * the first, whose ceiling would otherwise be the only one measured on a fresh process.
 */
async function warmUpBareServer(bare: { url: string }, scenarios: Scenario[]): Promise<void> {
  const routes = scenarios.filter((scenario) => scenario.ceiling.kind === 'bare');
  if (routes.length === 0) return;
  const seconds = Math.max(1, Math.round((SLICES * SLICE_S) / routes.length));
  for (const { label, ceiling, load: spec } of routes) {
    if (ceiling.kind !== 'bare') continue;
    const url = `${bare.url}${ceiling.path}`;
    assertClean(`${label} (bare route, warm-up)`, await load({ url, expectBody: spec.expectBody }, seconds));
  }
}

/** The Node floor of a callback (callback-floor.ts), with the service's Node flags. */
async function startFloorServer(databaseUrl: string, tenantId: string): Promise<{ url: string; pid: number }> {
  const port = await freePort();
  const child = startChild(
    process.execPath,
    [...SERVICE_NODE_FLAGS, '--import', 'tsx', path.join(BENCH_DIR, 'callback-floor.ts'), String(port), tenantId],
    { PATH: process.env.PATH, NODE_ENV: 'production', DATABASE_URL: databaseUrl },
  );
  cleanups.push(() => stopChild(child));
  const url = `http://127.0.0.1:${port}`;
  await waitFor200(url, child, performance.now(), 30_000);
  return { url, pid: child.pid! };
}

/** The servers beside the service: the bare route, and the callback's Node floor when a scenario asks for it. */
interface Helpers {
  bare: { url: string; pid: number };
  floor?: { url: string; pid: number };
}

const load = (spec: ScenarioLoad, durationS = DURATION_S) =>
  loadFromChild({ ...spec, connections: CONNECTIONS, durationS }, workDir);

async function measuredLoad(label: string, spec: ScenarioLoad): Promise<LoadResult> {
  const result = await load(spec);
  assertClean(label, result);
  return result;
}

interface Row {
  scenario: Scenario;
  service: LoadResult;
  /** CPU seconds the service used during the measured run. */
  serviceCpuS: number;
  peakRssMb: number;
  /** The service's V8 heap in use right after the run. */
  heapUsedMb: number;
  ceilingLabel: string;
  ceilingRps: number;
  /** CPU seconds of the ceiling's client (wrk or pgbench). */
  ceilingClientCpuS: number;
  serviceCpuUsPerRequest: number;
  /** The bare route's server CPU per request (read ceilings only). */
  ceilingServerCpuUsPerRequest?: number;
  /** The Node floor of a callback (callback-floor.ts), loaded in the same slices. */
  nodeFloor?: { result: LoadResult; cpuUsPerRequest: number };
  /** PostgreSQL's CPU per request under the service, pgbench and the Node floor (pgbench ceilings only). */
  postgresCpuUs?: { service: number; ceiling: number; floor?: number };
}

/**
 * Each measured run is cut into this many slices, the service's and its ceiling's in turn: the
 * machine's speed drifts by tens of percent within a minute, and a ratio of two runs made one
 * after the other measured the drift as much as the service.
 */
const SLICES = 5;
const SLICE_S = Math.max(1, Math.round(DURATION_S / SLICES));

/** The slices of one load as one run: requests summed, rates averaged, latencies the worst slice's. */
function combined(slices: LoadResult[]): LoadResult {
  const sum = (pick: (slice: LoadResult) => number) => slices.reduce((total, slice) => total + pick(slice), 0);
  return {
    requestsPerSecond: sum((slice) => slice.requestsPerSecond) / slices.length,
    p50: Math.max(...slices.map((slice) => slice.p50)),
    p99: Math.max(...slices.map((slice) => slice.p99)),
    total: sum((slice) => slice.total),
    non2xx: sum((slice) => slice.non2xx),
    errors: sum((slice) => slice.errors),
    timeouts: sum((slice) => slice.timeouts),
    mismatches: sum((slice) => slice.mismatches),
    clientCpuS: sum((slice) => slice.clientCpuS),
  };
}

/** A load for slice `slice`: unique notifications get transaction ids no other slice used. */
function sliceOf(spec: ScenarioLoad, slice: number, prefix = ''): ScenarioLoad {
  const { callbacks } = spec;
  if (callbacks?.transactionIds !== 'per-request') return spec;
  return { ...spec, callbacks: { ...callbacks, prefix: `${prefix}${callbacks.prefix}${slice}-` } };
}

/** One server's load in slices, with the CPU its process used for them. */
class SlicedLoad {
  private readonly slices: LoadResult[] = [];
  private cpuS = 0;
  private postgresCpuS = 0;

  constructor(
    private readonly label: string,
    private readonly spec: ScenarioLoad,
    private readonly pid: number,
    private readonly prefix = '',
  ) {}

  /** A run before the measured ones, with transaction ids of its own. */
  async warmUp(): Promise<void> {
    assertClean(`${this.label} (warm-up)`, await load(sliceOf(this.spec, 0, `${this.prefix}warm-`), WARMUP_S));
  }

  async runSlice(slice: number): Promise<void> {
    const cpuBefore = cpuSecondsOf(this.pid);
    const postgresBefore = postgresCpuSeconds();
    const result = await load(sliceOf(this.spec, slice, this.prefix), SLICE_S);
    assertClean(this.label, result);
    this.cpuS += cpuSecondsOf(this.pid) - cpuBefore;
    this.postgresCpuS += postgresCpuSeconds() - postgresBefore;
    this.slices.push(result);
  }

  get result(): LoadResult {
    return combined(this.slices);
  }

  get serverCpuS(): number {
    return this.cpuS;
  }

  get cpuUsPerRequest(): number {
    return (this.cpuS / this.result.total) * 1e6;
  }

  /** PostgreSQL's CPU per answered request (the database's share of the cores). */
  get postgresCpuUsPerRequest(): number {
    return (this.postgresCpuS / this.result.total) * 1e6;
  }
}

async function measure(scenario: Scenario, service: Service, helpers: Helpers): Promise<Row> {
  log(`- ${scenario.label}`);
  const { ceiling } = scenario;
  const measured = new SlicedLoad(scenario.label, scenario.load, service.pid);
  const bareLoad =
    ceiling.kind === 'bare'
      ? new SlicedLoad(
          `${scenario.label} (bare route)`,
          { url: `${helpers.bare.url}${ceiling.path}`, expectBody: scenario.load.expectBody },
          helpers.bare.pid,
        )
      : undefined;
  const floorLoad =
    scenario.nodeFloor && helpers.floor
      ? new SlicedLoad(
          `${scenario.label} (floor)`,
          { ...scenario.load, url: `${helpers.floor.url}${new URL(scenario.load.url).pathname}` },
          helpers.floor.pid,
          'floor-',
        )
      : undefined;
  const loads = [measured, bareLoad, floorLoad].filter((sliced) => sliced !== undefined);
  if (WARMUP_S > 0) for (const sliced of loads) await sliced.warmUp();
  const pgbenchSlices: { tps: number; clientCpuS: number; transactions: number; postgresCpuS: number }[] = [];
  const { peakMb } = await peakRss(service.pid, async () => {
    for (let slice = 0; slice < SLICES; slice++) {
      for (const sliced of loads) await sliced.runSlice(slice);
      if (ceiling.kind === 'pgbench') {
        const postgresBefore = postgresCpuSeconds();
        const figures = await pgbench(database.url, ceiling.script, {
          clients: SERVICE_POOL_SIZE,
          durationS: SLICE_S,
          defines: ceiling.defines,
        });
        pgbenchSlices.push({ ...figures, postgresCpuS: postgresCpuSeconds() - postgresBefore });
      }
    }
  });
  const result = measured.result;
  const heapMb = await heapUsedMb(service.urls.admin);
  const ceilingFigures = bareLoad
    ? {
        label: 'bare Fastify route, same bytes',
        rps: bareLoad.result.requestsPerSecond,
        clientCpuS: bareLoad.result.clientCpuS,
        serverCpuUsPerRequest: bareLoad.cpuUsPerRequest,
        postgresCpuUsPerRequest: undefined,
      }
    : {
        label: `pgbench, the service's SQL, ${SERVICE_POOL_SIZE} clients`,
        rps: pgbenchSlices.reduce((total, slice) => total + slice.tps, 0) / pgbenchSlices.length,
        clientCpuS: pgbenchSlices.reduce((total, slice) => total + slice.clientCpuS, 0),
        serverCpuUsPerRequest: undefined,
        postgresCpuUsPerRequest:
          (pgbenchSlices.reduce((total, slice) => total + slice.postgresCpuS, 0) /
            pgbenchSlices.reduce((total, slice) => total + slice.transactions, 0)) *
          1e6,
      };
  const floorFigures = floorLoad && { result: floorLoad.result, cpuUsPerRequest: floorLoad.cpuUsPerRequest };
  const postgresCpuUs = ceilingFigures.postgresCpuUsPerRequest
    ? {
        service: measured.postgresCpuUsPerRequest,
        ceiling: ceilingFigures.postgresCpuUsPerRequest,
        floor: floorLoad?.postgresCpuUsPerRequest,
      }
    : undefined;
  log(
    `  ${result.requestsPerSecond.toFixed(0)} req/s (ceiling ${ceilingFigures.rps.toFixed(0)}${floorFigures ? `, Node floor ${floorFigures.result.requestsPerSecond.toFixed(0)}` : ''}), p50 ${result.p50} ms, p99 ${result.p99} ms, ${peakMb.toFixed(0)} MB (heap ${heapMb.toFixed(0)} MB), CPU service ${measured.serverCpuS.toFixed(1)} s (${measured.cpuUsPerRequest.toFixed(0)} µs/req${ceilingFigures.serverCpuUsPerRequest ? `, bare ${ceilingFigures.serverCpuUsPerRequest.toFixed(0)}` : ''}${floorFigures ? `, floor ${floorFigures.cpuUsPerRequest.toFixed(0)}` : ''}), client ${result.clientCpuS.toFixed(1)} s, ceiling client ${ceilingFigures.clientCpuS.toFixed(1)} s${postgresCpuUs ? `, PostgreSQL CPU µs/req service ${postgresCpuUs.service.toFixed(0)}, ceiling ${postgresCpuUs.ceiling.toFixed(0)}${postgresCpuUs.floor ? `, floor ${postgresCpuUs.floor.toFixed(0)}` : ''}` : ''}`,
  );
  return {
    scenario,
    service: result,
    serviceCpuS: measured.serverCpuS,
    peakRssMb: peakMb,
    heapUsedMb: heapMb,
    ceilingLabel: ceilingFigures.label,
    ceilingRps: ceilingFigures.rps,
    ceilingClientCpuS: ceilingFigures.clientCpuS,
    serviceCpuUsPerRequest: measured.cpuUsPerRequest,
    ceilingServerCpuUsPerRequest: ceilingFigures.serverCpuUsPerRequest,
    nodeFloor: floorFigures,
    postgresCpuUs,
  };
}

const verdict = (met: boolean) => (met ? '**met**' : '**MISSED**');

function targetCell(row: Row, rows: Row[]): string {
  const { targetRatio, targetP50Ms, targetRequestsPerSecond, targetCpuWithin } = row.scenario;
  const parts: string[] = [];
  if (targetRatio !== undefined) {
    parts.push(
      `≥ ${targetRatio * 100}% of ceiling: ${verdict(row.service.requestsPerSecond / row.ceilingRps >= targetRatio)}`,
    );
  }
  if (targetP50Ms !== undefined) parts.push(`p50 < ${targetP50Ms} ms: ${verdict(row.service.p50 < targetP50Ms)}`);
  if (targetRequestsPerSecond !== undefined) {
    parts.push(
      `≥ ${targetRequestsPerSecond} req/s: ${verdict(row.service.requestsPerSecond >= targetRequestsPerSecond)}`,
    );
  }
  const other = targetCpuWithin && rows.find((candidate) => candidate.scenario.label === targetCpuWithin.of);
  if (targetCpuWithin && other) {
    const times = row.serviceCpuUsPerRequest / other.serviceCpuUsPerRequest;
    parts.push(
      `CPU/req ≤ ${targetCpuWithin.times}× ${targetCpuWithin.of}'s (${times.toFixed(2)}×): ${verdict(times <= targetCpuWithin.times)}`,
    );
  }
  return parts.length > 0 ? parts.join('; ') : '(none)';
}

interface Report {
  rows: Row[];
  firstStart: { readyMs: number; peakRssMb: number };
  npmStartMs: number;
  coldStart: { readyMs: number; peakRssMb: number };
  halfRate: { rate: number; result: LoadResult };
  postgresVersion: string;
  payments: string[];
}

async function describeRun(): Promise<string> {
  const { stdout: commit } = await run('git', ['rev-parse', '--short', 'HEAD']);
  const { stdout: changes } = await run('git', ['status', '--porcelain']);
  return `${commit.trim()}${changes.trim() ? ' (with uncommitted changes in the working tree)' : ''}`;
}

/** The callback's Node floor beside the service, and PostgreSQL's CPU per request (callback or invoice), when measured. */
function callbackLines(rows: Row[]): string[] {
  return rows.flatMap(({ scenario, nodeFloor, ceilingRps, service, postgresCpuUs }) => [
    ...(nodeFloor
      ? [
          `- ${scenario.label}, Node floor (scripts/bench/callback-floor.ts: node:http, JSON.parse and the one-callback statements`,
          `  through the service's database handle, nothing else), in the same slices: ${nodeFloor.result.requestsPerSecond.toFixed(0)} req/s, ${nodeFloor.cpuUsPerRequest.toFixed(0)} µs of CPU a request,`,
          `  ${((nodeFloor.result.requestsPerSecond / ceilingRps) * 100).toFixed(0)}% of the pgbench ceiling; the service reaches ${((service.requestsPerSecond / nodeFloor.result.requestsPerSecond) * 100).toFixed(0)}% of the floor.`,
        ]
      : []),
    ...(postgresCpuUs
      ? [
          `- ${scenario.label}, PostgreSQL's CPU per request in the same slices (all its processes): service ${postgresCpuUs.service.toFixed(0)} µs,`,
          `  pgbench ${postgresCpuUs.ceiling.toFixed(0)} µs${postgresCpuUs.floor ? `, Node floor ${postgresCpuUs.floor.toFixed(0)} µs` : ''}.`,
        ]
      : []),
  ]);
}

async function render(report: Report): Promise<string> {
  const { cores, cpu } = machine();
  const figure = (value: number) => (value >= 100 ? value.toFixed(0) : value.toFixed(1));
  const peakRssMb = Math.max(report.coldStart.peakRssMb, ...report.rows.map((row) => row.peakRssMb));
  const { rate, result: half } = report.halfRate;
  const lines = [
    '# Benchmarks',
    '',
    `${new Date().toISOString().slice(0, 10)}, commit ${await describeRun()}, ${cores} cores (${cpu}), Node ${process.version},`,
    `${report.postgresVersion.split(',')[0]}. Produced by \`npm run bench\` (scripts/bench/): the service built for production`,
    `(\`node ${SERVICE_NODE_FLAGS.map((flag) => `${flag} `).join('')}dist/src/cli/partnerctl.js serve\`, as \`npm start\` runs it; LOG_LEVEL=${LOG_LEVEL}, PostgreSQL pool of ${SERVICE_POOL_SIZE}), loaded over HTTP`,
    `by wrk (C, one thread) in a separate process, ${CONNECTIONS} connections, ${SLICES * SLICE_S} s per scenario after a ${WARMUP_S} s warm-up, in ${SLICES} slices`,
    `of ${SLICE_S} s taken in turn with its ceiling's; every request answered 2xx with the expected body. p50/p99: the worst slice's. CPU s:`,
    'seconds of CPU (user + system) used during the measured run by the service,',
    "by its load client (wrk) and by the ceiling's client (wrk or pgbench), all on the same two cores. Server CPU µs/req:",
    'the CPU per answered request of the service and of the bare route, what each answer costs however busy the machine.',
    '',
    '| scenario | req/s | p50 ms | p99 ms | CPU s service / client | server CPU µs/req service / bare | ceiling (same run) | ceiling req/s | ceiling client CPU s | ratio | peak RSS MB | heap used MB | target |',
    '|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|',
    ...report.rows.map((row) =>
      [
        row.scenario.label,
        row.service.requestsPerSecond.toFixed(0),
        figure(row.service.p50),
        figure(row.service.p99),
        `${row.serviceCpuS.toFixed(1)} / ${row.service.clientCpuS.toFixed(1)}`,
        `${row.serviceCpuUsPerRequest.toFixed(0)} / ${row.ceilingServerCpuUsPerRequest?.toFixed(0) ?? '-'}`,
        row.ceilingLabel,
        row.ceilingRps.toFixed(0),
        row.ceilingClientCpuS.toFixed(1),
        `${((row.service.requestsPerSecond / row.ceilingRps) * 100).toFixed(0)}%`,
        row.peakRssMb.toFixed(0),
        row.heapUsedMb.toFixed(0),
        targetCell(row, report.rows),
      ]
        .join(' | ')
        .replace(/^/, '| ')
        .replace(/$/, ' |'),
    ),
    '',
    ...callbackLines(report.rows),
    `- Unique callbacks at half the maximum rate (${rate} req/s asked, ${half.requestsPerSecond.toFixed(0)} req/s done, wrk paced by load.lua;`,
    `  client CPU ${half.clientCpuS.toFixed(1)} s): p50 ${figure(half.p50)} ms, p99 ${figure(half.p99)} ms. Target p99 < ${TARGETS.halfRateP99Ms} ms:`,
    `  ${verdict(half.p99 < TARGETS.halfRateP99Ms)}.`,
    `- Cold start on the populated database, spawn to \`/readyz\` 200: ${report.coldStart.readyMs.toFixed(0)} ms (RSS then ${report.coldStart.peakRssMb.toFixed(0)} MB).`,
    `  Target < ${TARGETS.coldStartMs} ms: ${verdict(report.coldStart.readyMs < TARGETS.coldStartMs)}. (First start on the empty database, migrations and`,
    `  reference-data import included: ${report.firstStart.readyMs.toFixed(0)} ms, peak RSS ${report.firstStart.peakRssMb.toFixed(0)} MB; not a target.)`,
    `- \`npm start\` on the built, unchanged tree (its incremental \`tsc -b\` included), spawn to \`/readyz\` 200:`,
    `  ${report.npmStartMs.toFixed(0)} ms. Target < ${TARGETS.npmStartMs} ms: ${verdict(report.npmStartMs < TARGETS.npmStartMs)}.`,
    `- Peak RSS of the service from its cold start through every scenario: ${peakRssMb.toFixed(0)} MB. Target < ${TARGETS.peakRssMb} MB:`,
    `  ${verdict(peakRssMb < TARGETS.peakRssMb)}.`,
    '',
    ...report.payments,
    '## How to read it',
    '',
    '- Read the ratios, not the absolute figures: the machine is shared and noisy, so a figure means something only next to',
    '  its ceiling, measured in alternating slices on the same machine. Client and server share the cores; both clients are',
    '  C programs, and the CPU columns show what each took.',
    '- Callback ceilings: pgbench runs the statements the service sends for one callback alone (the read, and for a new',
    '  notification the store; scripts/bench/scenarios.ts writes them from src/payments/notification-store.ts) with',
    '  -M prepared and as many clients as the service has pool connections: one callback, one transaction each. Under',
    '  load the service reads, and stores, the callbacks that arrive while others are under way together, one statement',
    '  and one commit for all (src/payments/notification-store.ts); the ceiling keeps one callback a transaction, so',
    '  grouping shows as the service gaining on it, never as a weaker ceiling. The gap is what the service adds: HTTP,',
    '  JSON, the checks, the driver, and the time a callback waits for its statements. The Node floor sends the same',
    '  statements per callback with nothing else around them; the PostgreSQL line says what each callback cost the',
    '  database under each load.',
    "- Invoice creation ceiling: pgbench runs the transaction of one invoice through the admin API, the service's own",
    '  statement (CREATE_INVOICE: the tenant read, the invoice, its payment request, its audit event); the NOTIFY that wakes',
    '  workers after commits, which the service sends once for the commits of its moment, is not in it. No worker runs:',
    '  the delivery has scenarios of its own below.',
    '- Read ceilings: a bare Fastify route answering the same bytes from memory, no auth, no database, loaded for as long as one',
    '  scenario before the first is measured (a process just started answers faster than one that has run). The service answers a',
    '  cached page through its whole pipeline (routing, hooks, query validation); the gap is what every request costs it: the credential,',
    '  both rate limits, twenty headers instead of two, the metric, and a process with a 40 MB heap instead of a bare one.',
    `- LOG_LEVEL=${LOG_LEVEL}: no line per request (at the default, info, each request costs a log line).`,
    '- RATE_LIMIT_PER_MINUTE=1e9: every request is counted against its credential, as in production, but none is refused.',
    '- p50/p99 at full load are mostly queueing (the client pushes as hard as it can); the half-rate line is the latency at',
    '  a sustainable load.',
    '',
  ];
  return lines.join('\n');
}

/** Whether --only picks the scenario labelled `label`: all of them without it. */
const selected = (label: string) => options.only === undefined || options.only.some((text) => label.includes(text));

/** Payment request worker settings of the delivery scenarios: the defaults, named for the record. */
const PAYMENT_WORKER_ENV = { PAYMENT_WORKER_CONCURRENCY: '64', PAYMENT_ENDPOINT_CONCURRENCY: '8' };

/** The payment request scenarios selected (--only), on a service and database of their own; their lines. */
async function measurePaymentDelivery(env: NodeJS.ProcessEnv, paymentDatabase: PaymentDatabase): Promise<string[]> {
  if (!Object.values(PAYMENT_SCENARIOS).some(selected)) return [];
  const ports = [await freePort(), await freePort(), await freePort()];
  const urls: Urls = {
    integrations: `http://127.0.0.1:${ports[0]}`,
    backend: `http://127.0.0.1:${ports[1]}`,
    admin: `http://127.0.0.1:${ports[2]}`,
  };
  const { DATABASE_URL: _shared, ...rest } = env;
  const paymentEnv: NodeJS.ProcessEnv = {
    ...rest,
    ...PAYMENT_WORKER_ENV,
    INTEGRATIONS_PORT: String(ports[0]),
    BACKEND_PORT: String(ports[1]),
    ADMIN_PORT: String(ports[2]),
    PAYMENT_WORKER: 'true',
    // Directly in the temporary directory: as root the embedded server runs as `postgres`, who
    // must reach DATA_DIR, and the bench's own directory is private.
    DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'partner-bench-payments-')),
  };
  cleanups.push(async () => rmSync(paymentEnv.DATA_DIR!, { recursive: true, force: true }));
  if (paymentDatabase === 'postgres') {
    const own = new ThrowawayDatabase(MAINTENANCE_URL, 'payments');
    await own.create();
    cleanups.push(() => own.drop());
    paymentEnv.DATABASE_URL = own.url;
  }
  log(`payment request scenarios (${paymentDatabase}): service with its worker`);
  // A first start imports the reference data, which is no delivery's work: the scenarios run on a
  // second. The figure is the highest peak (VmHWM) of each service process from when it is ready
  // to its stop.
  await (await startService(paymentEnv, urls, { nodeFlags: [] })).stop();
  let peakRssMb = 0;
  const startReady = async (workerEnv: NodeJS.ProcessEnv) => {
    const started = await startService(workerEnv, urls, {
      nodeFlags: profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
    });
    resetPeakRss(started.pid);
    return started;
  };
  let service = await startReady(paymentEnv);
  const stopService = async () => {
    const peakMb = peakRssSoFarMb(service.pid);
    log(`  (the service's peak RSS from its readiness to this stop: ${peakMb.toFixed(0)} MB)`);
    peakRssMb = Math.max(peakRssMb, peakMb);
    await service.stop();
  };
  const restart = async (worker: boolean) => {
    await stopService();
    service = await startReady({ ...paymentEnv, PAYMENT_WORKER: String(worker) });
    return service.pid;
  };
  try {
    const admin = new AdminClient(urls.admin, String(env.ADMIN_TOKEN));
    const perEndpoint = Number(PAYMENT_WORKER_ENV.PAYMENT_ENDPOINT_CONCURRENCY);
    const drainInvoices = Number(options['drain-invoices'] ?? BURST_INVOICES);
    const figures = await measurePayments(admin, workDir, selected, perEndpoint, restart, drainInvoices);
    const settings = Object.entries(PAYMENT_WORKER_ENV)
      .map(([name, value]) => `${name}=${value}`)
      .join(', ');
    await stopService();
    const lines = [
      ...paymentLines(figures, paymentDatabase, settings),
      `- Peak RSS of the service through these scenarios, from each start's readiness to its stop: ${peakRssMb.toFixed(0)} MB. Target < ${TARGETS.peakRssMb} MB: ${verdict(peakRssMb < TARGETS.peakRssMb)}.`,
      '',
    ];
    log(lines.join('\n'));
    return lines;
  } finally {
    await service.stop();
  }
}

/** An OTLP/HTTP receiver that reads every export and drops it (--tracing); its URL. */
async function startSpanSink(): Promise<string> {
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(async () => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function main(): Promise<void> {
  await ensureWrk();
  await build();
  await database.create();
  cleanups.push(() => database.drop());

  const [integrationsPort, backendPort, adminPort] = [await freePort(), await freePort(), await freePort()];
  const urls: Urls = {
    integrations: `http://127.0.0.1:${integrationsPort}`,
    backend: `http://127.0.0.1:${backendPort}`,
    admin: `http://127.0.0.1:${adminPort}`,
  };
  const adminToken = randomBytes(24).toString('hex');
  const env: NodeJS.ProcessEnv = {
    ...(options.tracing && { OTEL_EXPORTER_OTLP_ENDPOINT: await startSpanSink(), OTEL_TRACES_SAMPLER: 'always_on' }),
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    DATABASE_URL: database.url,
    DATA_DIR: workDir,
    SECRET_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    HOST: '127.0.0.1',
    ADMIN_HOST: '127.0.0.1',
    INTEGRATIONS_PORT: String(integrationsPort),
    BACKEND_PORT: String(backendPort),
    ADMIN_PORT: String(adminPort),
    PORTAL_PORT: '0',
    ADMIN_TOKEN: adminToken,
    LOG_LEVEL,
    // Counted on every request as in production, never reached: the bench measures throughput.
    RATE_LIMIT_PER_MINUTE: String(1e9),
    ALLOW_PRIVATE_PAYMENT_ENDPOINTS: 'true',
    PAYMENT_WORKER: 'false',
  };

  log('first start, on the empty database (migrations, reference-data import)');
  const first = await startService(env, urls, { nodeFlags: [] });
  const firstPeak = peakRssSoFarMb(first.pid);
  await first.stop();
  log(`  ready in ${first.readyMs.toFixed(0)} ms`);
  log('npm start on the built, unchanged tree');
  const npmStart = await startService(env, urls, 'npm start');
  await npmStart.stop();
  log(`  ready in ${npmStart.readyMs.toFixed(0)} ms`);
  log('cold start, on the populated database');
  const service = await startService(env, urls, {
    nodeFlags: profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
  });
  const coldPeak = peakRssSoFarMb(service.pid);
  log(`  ready in ${service.readyMs.toFixed(0)} ms`);

  log('fixtures through the admin API');
  const admin = new AdminClient(urls.admin, adminToken);
  const fixtures = await createFixtures(admin);
  await primeDuplicates(urls, fixtures);
  await createPgbenchFixtures(database, fixtures);
  const scenarios = [
    ...callbackScenarios(urls, fixtures, workDir),
    invoiceScenario(urls, fixtures, adminToken, workDir),
    ...(await readScenarios(urls, fixtures)),
  ].filter((scenario) => selected(scenario.label));
  const helpers: Helpers = {
    bare: await startBareServer(scenarios),
    floor: scenarios.some((scenario) => scenario.nodeFloor)
      ? await startFloorServer(database.url, fixtures.tenantId)
      : undefined,
  };
  await warmUpBareServer(helpers.bare, scenarios);

  log(`scenarios: ${CONNECTIONS} connections, ${DURATION_S} s each`);
  const rows: Row[] = [];
  for (const scenario of scenarios) rows.push(await measure(scenario, service, helpers));

  const payments: string[] = [];
  for (const paymentDatabase of PAYMENT_DATABASES)
    payments.push(...(await measurePaymentDelivery(env, paymentDatabase)));

  const unique = rows.find((row) => row.scenario.label === CALLBACK_UNIQUE);
  const rate = unique && Math.max(1, Math.round(unique.service.requestsPerSecond / 2));
  if (rate) log(`- ${CALLBACK_UNIQUE} at ${rate} req/s`);
  const halfRate = rate && {
    rate,
    result: await measuredLoad(`${CALLBACK_UNIQUE} at half rate`, uniqueCallbackAtRate(urls, fixtures, rate)),
  };
  if (halfRate) log(`  p50 ${halfRate.result.p50} ms, p99 ${halfRate.result.p99} ms`);
  if (options.only !== undefined || !halfRate) return void (await service.stop());

  const [{ version }] = await database.sql<{ version: string }>('select version()');
  await service.stop();
  if (profileDir) log(`CPU profile of the measured service: ${profileDir}`);

  const markdown = await render({
    rows,
    firstStart: { readyMs: first.readyMs, peakRssMb: firstPeak },
    npmStartMs: npmStart.readyMs,
    coldStart: { readyMs: service.readyMs, peakRssMb: coldPeak },
    halfRate,
    postgresVersion: version,
    payments,
  });
  console.log(markdown);
  if (!options['no-write'] && !profileDir && !options.tracing && !options['drain-invoices']) {
    writeFileSync(path.join(projectRoot, 'BENCHMARKS.md'), markdown);
    // Laid out as `npm run format` would (aligned table), so that `npm run lint` stays clean.
    await run(path.join(projectRoot, 'node_modules/.bin/biome'), ['format', '--write', 'BENCHMARKS.md']);
  }
}

try {
  await main();
} catch (error) {
  log(error instanceof Error ? (error.stack ?? error.message) : String(error));
  const service = latest.service;
  if (service) {
    const { pid, exitCode, signalCode } = service;
    const state = exitCode === null && signalCode === null ? 'running' : `exited (${exitCode ?? signalCode})`;
    log(`the service started last (pid ${pid}) was ${state}; its last output:\n${service.tail().slice(-4000)}`);
  }
  process.exitCode = 1;
} finally {
  await cleanUp();
}
