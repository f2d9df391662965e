// Process and HTTP helpers of the benchmark: child processes, free ports, readiness, the admin
// API, the load client, pgbench, memory sampling and the throwaway database.
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { projectRoot } from '../../src/paths.js';

export const BENCH_DIR = path.join(projectRoot, 'scripts/bench');

/** Runs a command to completion; rejects with its output when it fails. */
export function run(
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; allowFailure?: boolean } = {},
) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(command, args, { cwd: projectRoot, env: options.env ?? process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      const result = { code: code ?? 1, stdout, stderr };
      if (code === 0 || options.allowFailure) resolve(result);
      else reject(new Error(`${command} ${args.join(' ')} exited with ${code}:\n${stdout}${stderr}`));
    });
  });
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (!address || typeof address === 'string') throw new Error('no free port');
  return address.port;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `url` until it answers 200; resolves with the milliseconds since `since`. */
export async function waitFor200(
  url: string,
  child: ChildProcess,
  since: number,
  timeoutMs = 120_000,
): Promise<number> {
  while (performance.now() - since < timeoutMs) {
    if (child.exitCode !== null) throw new Error(`process exited with ${child.exitCode} before ${url} answered 200`);
    const ok = await fetch(url).then(
      (response) => response.ok,
      () => false,
    );
    if (ok) return performance.now() - since;
    await sleep(5);
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms`);
}

/**
 * A long-running child whose stderr is kept (last 20 kB) for the error message if it dies. A
 * `group` child leads a process group of its own, which stopChild signals whole (npm and its node).
 */
export function startChild(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  group = false,
): ChildProcess & { tail: () => string; group: boolean } {
  const child = spawn(command, args, { cwd: projectRoot, env, stdio: ['ignore', 'pipe', 'pipe'], detached: group });
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk).slice(-20_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return Object.assign(child, { tail: () => tail, group });
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once it exited. */
export async function stopChild(child: ChildProcess & { group?: boolean }, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const signal = (name: NodeJS.Signals) => (child.group ? process.kill(-child.pid!, name) : child.kill(name));
  signal('SIGTERM');
  const timer = setTimeout(() => signal('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

export class AdminClient {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
  ) {}

  /** The answer's JSON, as `T`: the fields the caller reads, which nothing checks. */
  async request<T = unknown>(method: string, route: string, body?: unknown): Promise<T> {
    const response = await fetch(`${this.baseUrl}/admin/v1${route}`, {
      method,
      headers: {
        authorization: `Bearer ${this.token}`,
        ...(body !== undefined && { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`admin ${method} ${route}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  }
}

/** Runs `tasks` with at most `concurrency` at once, in order of the list. */
export async function inParallel<T>(
  count: number,
  concurrency: number,
  task: (index: number) => Promise<T>,
): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const index = next++;
      results[index] = await task(index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return results;
}

/** What one load run is: given to wrk's script (load.lua) as a file of lines. */
export interface LoadSpec {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** A fixed body, or `callbacks`: one notification body per request, cycling through the invoices. */
  body?: string;
  callbacks?: {
    invoiceIds: string[];
    template: Record<string, string>;
    /** `per-request`: prefix + request number, never repeating; `per-invoice`: prefix + invoice id. */
    transactionIds: 'per-request' | 'per-invoice';
    prefix: string;
  };
  /** Each response must be exactly this (status 2xx and body), or the run is invalid. */
  expectBody: string;
  /** Only the start of each body must be `expectBody`: answers that differ by an id each. */
  expectBodyStart?: boolean;
  connections: number;
  durationS: number;
  /** Requests a second over all connections; unset: as many as they manage. */
  overallRate?: number;
}

/** A load as a scenario states it; the runner adds connections and duration. */
export type ScenarioLoad = Omit<LoadSpec, 'connections' | 'durationS'>;

export interface LoadResult {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  total: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  mismatches: number;
  /** CPU seconds (user + system) the load client used: what it took from the cores it shares. */
  clientCpuS: number;
}

/** The callback body, as a partner's payment backend sends it. */
export function notificationBody(template: Record<string, string>, invoiceId: string, transactionId: string): string {
  return JSON.stringify({ invoice_id: invoiceId, transaction_id: transactionId, ...template });
}

/**
 * Runs a command and measures its CPU time (user + system, children included) with the shell's
 * `times`, whose second line is the children's.
 */
export async function runMeasuringCpu(
  command: string,
  args: string[],
  env?: NodeJS.ProcessEnv,
): Promise<{ stdout: string; stderr: string; cpuS: number }> {
  const { stdout, stderr } = await run('sh', ['-c', '"$@"; code=$?; times; exit $code', 'sh', command, ...args], {
    env,
  });
  const lines = stdout.trimEnd().split('\n');
  const seconds = [...lines.at(-1)!.matchAll(/(\d+)m([\d.]+)s/g)].map(([, m, s]) => Number(m) * 60 + Number(s));
  if (seconds.length !== 2) throw new Error(`no CPU times in the output of ${command}:\n${stdout}`);
  return { stdout: lines.slice(0, -2).join('\n'), stderr, cpuS: seconds[0] + seconds[1] };
}

/** wrk (C, Debian's package): installed when missing, as .ci/run does. */
export async function ensureWrk(): Promise<void> {
  if ((await run('sh', ['-c', 'command -v wrk'], { allowFailure: true })).code === 0) return;
  console.error('installing wrk (apt-get)');
  await run('sh', ['-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk'], {
    env: process.env,
  });
}

/** The spec as load.lua reads it: one `<key> <value>` a line (JSON bodies hold no newline). */
function specLines(spec: LoadSpec): string[] {
  const lines = [`method ${spec.method ?? 'GET'}`, `expect ${spec.expectBody}`];
  if (spec.expectBodyStart) lines.push('expect_start true');
  for (const [name, value] of Object.entries(spec.headers ?? {})) lines.push(`header ${name}: ${value}`);
  if (spec.body !== undefined) lines.push(`body ${spec.body}`);
  if (spec.overallRate !== undefined) lines.push(`rate ${spec.overallRate}`);
  if (spec.callbacks) {
    const { invoiceIds, template, transactionIds, prefix } = spec.callbacks;
    const [part1, part2, part3] = notificationBody(template, '<invoice>', '<transaction>').split(
      /<invoice>|<transaction>/,
    );
    lines.push(`part1 ${part1}`, `part2 ${part2}`, `part3 ${part3}`, `transactions ${transactionIds}`);
    lines.push(`prefix ${prefix}`, ...invoiceIds.map((id) => `invoice ${id}`));
  }
  return lines;
}

/** Loads a server with wrk (one thread: the machine has few cores, and one wrk thread is plenty). */
export async function loadFromChild(spec: LoadSpec, workDir: string): Promise<LoadResult> {
  const specFile = path.join(workDir, `load-${process.hrtime.bigint()}.txt`);
  writeFileSync(specFile, `${specLines(spec).join('\n')}\n`);
  const { stdout, cpuS } = await runMeasuringCpu('wrk', [
    '-t1',
    `-c${spec.connections}`,
    `-d${spec.durationS}s`,
    '--timeout',
    '10s',
    '-s',
    path.join(BENCH_DIR, 'load.lua'),
    spec.url,
    '--',
    specFile,
  ]);
  const line = stdout.split('\n').find((candidate) => candidate.startsWith('{'));
  if (!line) throw new Error(`wrk printed no result:\n${stdout}`);
  return { ...(JSON.parse(line) as Omit<LoadResult, 'clientCpuS'>), clientCpuS: cpuS };
}

/** A run with any error, non-2xx or unexpected body measured something else: stop. */
export function assertClean(label: string, result: LoadResult): void {
  const problems = Object.entries({
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    mismatches: result.mismatches,
  })
    .filter(([, count]) => count > 0)
    .map(([name, count]) => `${count} ${name}`);
  if (problems.length > 0 || result.total === 0) {
    throw new Error(
      `INVALID BENCHMARK: "${label}" had ${problems.join(', ') || 'no requests'} (of ${result.total} requests)`,
    );
  }
}

const statusKb = (pid: number, field: string) =>
  Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'))?.[1] ?? 0);

/** The peak resident set of `pid` since it started (or since the last reset), in MB. */
export const peakRssSoFarMb = (pid: number) => statusKb(pid, 'VmHWM') / 1024;

/** Starts `pid`'s VmHWM again from its present resident set (clear_refs 5); false where that is not permitted. */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/**
 * The peak resident set of `pid` while `task` runs: VmHWM after resetting it (clear_refs 5),
 * and VmRSS sampled every 50 ms in case the reset is not permitted.
 */
export async function peakRss<T>(pid: number, task: () => Promise<T>): Promise<{ result: T; peakMb: number }> {
  const hwmReset = resetPeakRss(pid);
  let sampled = statusKb(pid, 'VmRSS');
  const timer = setInterval(() => {
    sampled = Math.max(sampled, statusKb(pid, 'VmRSS'));
  }, 50);
  try {
    const result = await task();
    const peakKb = Math.max(sampled, statusKb(pid, 'VmRSS'), hwmReset ? statusKb(pid, 'VmHWM') : 0);
    return { result, peakMb: peakKb / 1024 };
  } finally {
    clearInterval(timer);
  }
}

/** CPU seconds (user + system) `pid` has used so far. */
export function cpuSecondsOf(pid: number): number {
  // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

/**
 * CPU seconds (user + system) PostgreSQL's processes on this machine have used so far: every live
 * `postgres` process, and the backends that have exited, which their postmaster has reaped.
 */
export function postgresCpuSeconds(): number {
  let ticks = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    if (!stat.includes('(postgres)')) continue;
    // utime, stime, cutime, cstime: the 12th to 15th fields after the command name.
    const fields = stat.split(') ')[1].split(' ');
    ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
  }
  return ticks / CLOCK_TICKS_PER_SECOND;
}

/** CPU seconds the whole machine has been busy so far, all cores and processes together (/proc/stat). */
export function machineBusySeconds(): number {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  // user nice system idle iowait irq softirq steal ...: all but idle and iowait.
  return (ticks.reduce((sum, value) => sum + value, 0) - ticks[3] - ticks[4]) / CLOCK_TICKS_PER_SECOND;
}

/** USER_HZ: what Linux reports CPU times in, 100 on every common platform. */
const CLOCK_TICKS_PER_SECOND = 100;

/** The V8 heap in use in the service, in MB, from its Prometheus metrics (admin listener). */
export async function heapUsedMb(adminUrl: string): Promise<number> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const bytes = Number(text.match(/^nodejs_heap_size_used_bytes (\S+)$/m)?.[1] ?? Number.NaN);
  return bytes / 1024 / 1024;
}

export function machine() {
  return { cores: os.availableParallelism(), cpu: os.cpus()[0]?.model ?? 'unknown' };
}

/** A database created for this run and dropped with (force) at the end, whatever happened. */
export class ThrowawayDatabase {
  readonly name: string;
  readonly url: string;

  /** `purpose` tells apart the databases of one run. */
  constructor(
    private readonly maintenanceUrl: string,
    purpose = '',
  ) {
    this.name = `bench_${Date.now().toString(36)}_${process.pid}${purpose && `_${purpose}`}`;
    const url = new URL(maintenanceUrl);
    url.pathname = `/${this.name}`;
    this.url = url.toString();
  }

  async create(): Promise<void> {
    await this.maintenance(`create database ${this.name}`);
  }

  async drop(): Promise<void> {
    await this.maintenance(`drop database if exists ${this.name} with (force)`);
  }

  /** Runs statements in this database (fixtures of the pgbench ceiling, checks). */
  async sql<T = Record<string, unknown>>(statement: string): Promise<T[]> {
    const client = postgres(this.url, { max: 1, onnotice: () => {} });
    try {
      return [...(await client.unsafe(statement))] as T[];
    } finally {
      await client.end({ timeout: 5 });
    }
  }

  private async maintenance(statement: string): Promise<void> {
    const client = postgres(this.maintenanceUrl, { max: 1, onnotice: () => {} });
    try {
      await client.unsafe(statement);
    } finally {
      await client.end({ timeout: 5 });
    }
  }
}

export interface PgbenchResult {
  tps: number;
  /** CPU seconds pgbench itself used. */
  clientCpuS: number;
  latencyAvgMs: number;
  transactions: number;
  failed: number;
}

/** pgbench with a custom script; `-M prepared` like postgres.js, which prepares every statement. */
export async function pgbench(
  databaseUrl: string,
  script: string,
  options: { clients: number; durationS: number; defines: Record<string, string> },
): Promise<PgbenchResult> {
  const url = new URL(databaseUrl);
  const args = [
    '-n',
    '-M',
    'prepared',
    '-f',
    script,
    '-c',
    String(options.clients),
    '-j',
    '1',
    '-T',
    String(options.durationS),
    '-h',
    url.hostname,
    '-p',
    url.port || '5432',
    '-U',
    decodeURIComponent(url.username) || 'postgres',
    ...Object.entries(options.defines).flatMap(([name, value]) => ['-D', `${name}=${value}`]),
    url.pathname.slice(1),
  ];
  const { stdout, stderr, cpuS } = await runMeasuringCpu('pgbench', args, {
    ...process.env,
    PGPASSWORD: decodeURIComponent(url.password),
  });
  const number = (pattern: RegExp) => Number(stdout.match(pattern)?.[1] ?? Number.NaN);
  const result = {
    tps: number(/tps = ([\d.]+) \(without initial connection time\)/),
    latencyAvgMs: number(/latency average = ([\d.]+) ms/),
    transactions: number(/number of transactions actually processed: (\d+)/),
    failed: number(/number of failed transactions: (\d+)/) || 0,
    clientCpuS: cpuS,
  };
  if (!Number.isFinite(result.tps) || result.failed > 0 || /error/i.test(stderr)) {
    throw new Error(`INVALID BENCHMARK: pgbench ${path.basename(script)}:\n${stdout}${stderr}`);
  }
  return result;
}
