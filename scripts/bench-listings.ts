// Benchmark of the backend host's listings on PostgreSQL, over real HTTP: not a test.
//
//   npx tsx scripts/bench-listings.ts [--duration 10] [--connections 10]
//
// Creates a fresh database on BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres,
// used only to create and drop it), starts `partnerctl serve` on it in a child process (first-start
// import included), issues a partner key, supports a few cities with attractions, then loads each
// scenario with autocannon and prints requests/s and latency p50/p99. The database is dropped at the end.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { parseArgs } from 'node:util';
// @ts-expect-error autocannon ships no types
import autocannon from 'autocannon';
import postgres from 'postgres';
import { projectRoot } from '../src/paths.js';

const { values } = parseArgs({ options: { duration: { type: 'string', default: '10' }, connections: { type: 'string', default: '10' } } });
const DURATION_S = Number(values.duration);
const CONNECTIONS = Number(values.connections);
const MAINTENANCE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const ADMIN_TOKEN = randomBytes(16).toString('hex');

function databaseUrl(name: string): string {
  const url = new URL(MAINTENANCE_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

async function maintenance(statement: string): Promise<void> {
  const sql = postgres(MAINTENANCE_URL, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(statement);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** `partnerctl serve` in a child; resolves with each listener's URL once all three listen. */
function startService(env: Record<string, string>): Promise<{ child: ChildProcess; urls: Record<string, string> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(projectRoot, 'src/cli/partnerctl.ts'), 'serve'], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    const urls: Record<string, string> = {};
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk;
      for (const match of output.matchAll(/"msg":"(\w+) listener on (http:\/\/[^"]+)"/g)) urls[match[1]] = match[2];
      const imported = output.match(/"ms":(\d+),"msg":"reference data imported/);
      if (imported && !urls.importMs) urls.importMs = imported[1];
      if (['integrations', 'backend', 'admin'].every((name) => urls[name])) {
        // From here on the request log is only drained, never parsed: it must not cost the benchmark.
        child.stdout!.off('data', onData);
        child.stdout!.resume();
        resolve({ child, urls });
      }
    };
    child.stdout!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`service exited with ${code}:\n${output}`)));
  });
}

async function admin(url: string, method: string, route: string, body?: unknown) {
  const response = await fetch(`${url}/admin/v1${route}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${await response.text()}`);
  return response.json();
}

interface Result {
  requests: { average: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
}

async function load(url: string, headers: Record<string, string>): Promise<Result> {
  return autocannon({ url, headers, connections: CONNECTIONS, duration: DURATION_S });
}

async function main(): Promise<void> {
  const name = `bench_geo_${randomBytes(4).toString('hex')}`;
  await maintenance(`create database ${name}`);
  let child: ChildProcess | undefined;
  try {
    const started = performance.now();
    const service = await startService({
      DATABASE_URL: databaseUrl(name),
      HOST: '127.0.0.1',
      INTEGRATIONS_PORT: '0',
      BACKEND_PORT: '0',
      ADMIN_PORT: '0',
      ADMIN_TOKEN,
      LOG_LEVEL: 'info',
      PAYMENT_WORKER: 'false',
    });
    child = service.child;
    const { urls } = service;
    console.log(`first start (migrations + import of countries and cities): ${Math.round(performance.now() - started)} ms, import ${urls.importMs} ms`);

    const { key } = await admin(urls.admin, 'POST', '/partner-keys', { name: 'bench', scopes: ['countries:read', 'cities:read'] });
    const saudiArabia = (await admin(urls.admin, 'GET', '/countries/SA')).country;
    const { cities } = await admin(urls.admin, 'GET', `/cities?name=a&country=SA`);
    for (const city of cities.slice(0, 10)) {
      await admin(urls.admin, 'PATCH', `/cities/${city.id}`, { supported: true });
      await admin(urls.admin, 'POST', `/cities/${city.id}/attractions`, { name: `Old town of ${city.name}` });
    }

    const headers = { authorization: `Api-Key ${key}` };
    const first = await fetch(`${urls.backend}/v1/cities/`, { headers });
    const etag = first.headers.get('etag')!;
    const scenarios: [string, string, Record<string, string>][] = [
      ['countries, first page', '/v1/countries/', headers],
      ['countries, limit 100 offset 200', '/v1/countries/?limit=100&offset=200', headers],
      ['cities, first page', '/v1/cities/', headers],
      ['cities, offset 100000', '/v1/cities/?offset=100000', headers],
      ['cities, limit 100 offset 125000', '/v1/cities/?limit=100&offset=125000', headers],
      ['cities, country=SA', `/v1/cities/?country=${saudiArabia.id}`, headers],
      ['cities, country=SA offset 200', `/v1/cities/?country=${saudiArabia.id}&offset=200`, headers],
      ['cities, has_attractions=true', '/v1/cities/?has_attractions=true', headers],
      ['cities, Accept-Language: ar', '/v1/cities/?offset=5000', { ...headers, 'accept-language': 'ar' }],
      ['cities, If-None-Match (304)', '/v1/cities/', { ...headers, 'if-none-match': etag }],
    ];
    console.log(`\n${CONNECTIONS} connections, ${DURATION_S} s per scenario\n`);
    console.log(`${'scenario'.padEnd(36)} ${'req/s'.padStart(8)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)}  non-2xx (304s expected where named)`);
    for (const [label, route, scenarioHeaders] of scenarios) {
      // Warm the cached order of this filter first, as a running service would have.
      await fetch(`${urls.backend}${route}`, { headers: scenarioHeaders });
      const result = await load(`${urls.backend}${route}`, scenarioHeaders);
      console.log(
        `${label.padEnd(36)} ${result.requests.average.toFixed(0).padStart(8)} ${String(result.latency.p50).padStart(7)} ${String(result.latency.p99).padStart(7)}  ${result.non2xx}${result.errors ? ` (${result.errors} errors)` : ''}`,
      );
    }
  } finally {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((resolve) => child!.once('exit', resolve));
    }
    await maintenance(`drop database if exists ${name} with (force)`);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
