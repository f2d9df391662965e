// The production build as docs/deploy.md gives it: built once (`npm run build`), then only the
// files package.json's `files` names (what `npm pack` would ship: the build and what the service
// reads at run time) and the lockfile, with runtime dependencies only (`npm ci --omit=dev`),
// started with `npm run serve` on an empty database. It creates the database, imports the
// reference data and serves every kind of page, with nothing only development needs on disk.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/paths.js';
import { TEST_ADMIN_TOKEN, testEnv } from '../support/env.js';
import { type ServiceProcess, watchService } from '../support/process.js';
import { checkedOutCommit, packageVersion } from '../support/release.js';
import { DATABASE_KINDS, type ScenarioDatabase, scenarioDatabase } from './support/databases.js';

const INSTALL_TIMEOUT_MS = 5 * 60_000;
/**
 * The devDependencies only development needs: those the lockfile marks `dev`. One a runtime
 * dependency needs as well (ajv-formats, which Fastify's validator compiler uses) rightly ships.
 */
const lockedPackages: Record<string, { dev?: boolean }> = JSON.parse(
  readFileSync(path.join(projectRoot, 'package-lock.json'), 'utf8'),
).packages;
const devDependencies = Object.keys(
  JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')).devDependencies,
).filter((name) => lockedPackages[`node_modules/${name}`]?.dev === true);

/** The process running the service under `npm run serve` (npm, then a shell, then node). */
function servicePid(npmPid: number): number {
  const table = execFileSync('ps', ['-e', '-o', 'pid=,ppid=,args='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((line) => line.trim().match(/^(\d+)\s+(\d+)\s+(.*)$/)!)
    .map(([, pid, ppid, args]) => ({ pid: Number(pid), ppid: Number(ppid), args }));
  const descendants = [npmPid];
  for (let added = true; added; ) {
    const next = table.filter((row) => descendants.includes(row.ppid) && !descendants.includes(row.pid));
    descendants.push(...next.map((row) => row.pid));
    added = next.length > 0;
  }
  const node = table.find((row) => descendants.includes(row.pid) && /^\S*node .*partnerctl\.js serve/.test(row.args));
  if (!node) throw new Error('no service process under npm run serve');
  return node.pid;
}

function residentMb(pid: number): number {
  const kb = Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)![1]);
  return Math.round(kb / 1024);
}

describe.skipIf(!DATABASE_KINDS.includes('PostgreSQL'))('the production build', () => {
  let copy: string;
  let database: ScenarioDatabase;
  let service: ServiceProcess | undefined;
  afterAll(async () => {
    await service?.stop('SIGKILL');
    await database?.drop();
    if (copy) rmSync(path.dirname(copy), { recursive: true, force: true });
  });

  it(
    'starts with runtime dependencies only, imports the reference data and serves',
    async () => {
      execFileSync('npm', ['run', 'build'], { cwd: projectRoot, stdio: 'pipe' });
      copy = path.join(mkdtempSync(path.join(tmpdir(), 'pi-production-')), 'app');
      const [pack] = JSON.parse(
        execFileSync('npm', ['pack', '--dry-run', '--json', '--loglevel=error'], {
          cwd: projectRoot,
          encoding: 'utf8',
        }),
      );
      const shipped: string[] = [...pack.files.map((file: { path: string }) => file.path), 'package-lock.json'];
      for (const file of shipped) cpSync(path.join(projectRoot, file), path.join(copy, file));
      const installStarted = Date.now();
      execFileSync('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund', '--loglevel=error'], {
        cwd: copy,
        stdio: 'pipe',
      });
      const installMs = Date.now() - installStarted;
      const devOnDisk = devDependencies.filter((name) => existsSync(path.join(copy, 'node_modules', name)));

      database = await scenarioDatabase('PostgreSQL', { empty: true });
      const startedAt = Date.now();
      const npm = spawn('npm', ['run', '--silent', 'serve'], {
        cwd: copy,
        env: { PATH: process.env.PATH ?? '', ...testEnv(database.target), LOG_LEVEL: 'info' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      service = await watchService(npm);
      const pid = servicePid(npm.pid!);
      const ready = await fetch(`${service.urls.admin}/readyz`);
      const startMs = Date.now() - startedAt;
      const health = await (await fetch(`${service.urls.integrations}/healthz`)).json();
      const key = await (
        await fetch(`${service.urls.admin}/admin/v1/partner-keys`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'production build', scopes: ['countries:read', 'cities:read'] }),
        })
      ).json();
      const listing = async (what: string) =>
        (
          await fetch(`${service!.urls.backend}/v1/${what}/?limit=1`, {
            headers: { authorization: `Api-Key ${key.key}` },
          })
        ).json();
      const [countries, cities] = [await listing('countries'), await listing('cities')];
      // Files read at run time beside the build: the console's assets, the partner guide, partner tools.
      const pages = await Promise.all(
        [
          `${service.urls.admin}/console/assets/console.css`,
          `${service.urls.integrations}/docs/`,
          `${service.urls.integrations}/docs/partner-tools.mjs`,
        ].map(async (url) => `${new URL(url).pathname} ${(await fetch(url)).status}`),
      );
      const rssMb = residentMb(pid);
      const imported = service.output().includes('reference data imported');
      // SIGTERM to the service itself (as systemd or a container runtime sends it): npm exits with it.
      const exited = once(npm, 'exit');
      process.kill(pid, 'SIGTERM');
      const [code] = await exited;
      console.log(
        `[faults] production build: npm ci --omit=dev ${installMs} ms, devDependencies on disk ${devOnDisk.length}, ` +
          `started and ready in ${startMs} ms on an empty database (reference data imported: ${imported}), ` +
          `/healthz ${JSON.stringify(health)}, countries ${countries.count}, cities ${cities.count}, ${pages.join(', ')}, ` +
          `files shipped ${shipped.length}, RSS ${rssMb} MB, exit ${code}`,
      );
      expect(devDependencies.length).toBeGreaterThan(10);
      expect(devOnDisk).toEqual([]);
      // The copy is no git checkout: the commit is the one the build wrote beside itself.
      expect(health).toEqual({ status: 'ok', version: packageVersion, commit: checkedOutCommit });
      expect(ready.status).toBe(200);
      expect(imported).toBe(true);
      expect(countries.count).toBeGreaterThan(200);
      expect(cities.count).toBeGreaterThan(100_000);
      expect(pages.every((page) => page.endsWith(' 200'))).toBe(true);
      expect(code).toBe(0);
    },
    INSTALL_TIMEOUT_MS,
  );
});
