// What only the embedded mode does: the service's own PostgreSQL server in DATA_DIR, initialised
// on first start, durable, private, and recovered after the service or the server is killed.
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { CLUSTER_DIR_NAME, startEmbeddedServer } from '../../src/db/embedded-server.js';
import { createLogger } from '../../src/logger.js';
import { connectTo, copyTemplateDataDir, TEST_DATABASE_URL, type TestDatabase } from '../support/database.js';
import { TEST_ADMIN_TOKEN, testEnv } from '../support/env.js';
import { waitFor } from '../support/partner-endpoint.js';
import { type ServiceProcess, startServiceProcess } from '../support/process.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function query<T>(url: string, text: string): Promise<T[]> {
  const sql = connectTo(url);
  try {
    return (await sql.unsafe(text)) as unknown as T[];
  } finally {
    await sql.end();
  }
}

/** The pid of the server running in `dataDir`, from its pid file. */
const serverPid = (dataDir: string) =>
  Number(readFileSync(path.join(dataDir, CLUSTER_DIR_NAME, 'postmaster.pid'), 'utf8').split('\n')[0]);

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe.skipIf(TEST_DATABASE_URL)('the embedded PostgreSQL server', () => {
  it('is initialised on first start: durable, on a socket only, with a password kept private', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'pi-embedded-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const logger = createLogger('silent');
    let server = await startEmbeddedServer(dataDir, logger);
    try {
      const [settings] = await query<Record<string, string>>(
        server.url,
        `select current_setting('fsync') as fsync, current_setting('synchronous_commit') as synchronous_commit,
                current_setting('listen_addresses') as listen_addresses, current_setting('server_version_num') as version`,
      );
      expect(settings).toMatchObject({ fsync: 'on', synchronous_commit: 'on', listen_addresses: '' });
      expect(Number(settings.version)).toBeGreaterThanOrEqual(150000);
      expect(Number(settings.version)).toBeLessThan(160000);
      await query(server.url, 'create table kept (id int); insert into kept values (1)');
    } finally {
      await server.stop();
    }
    const passwordFile = path.join(dataDir, 'postgresql.password');
    expect(statSync(passwordFile).mode & 0o777).toBe(0o600);
    expect(new URL(server.url).password).toBe(readFileSync(passwordFile, 'utf8').trim());
    expect(existsSync(path.join(dataDir, CLUSTER_DIR_NAME, 'postmaster.pid'))).toBe(false);

    server = await startEmbeddedServer(dataDir, logger);
    try {
      expect(await query(server.url, 'select id from kept')).toEqual([{ id: 1 }]);
      // The socket asks for the password like any connection.
      const wrong = new URL(server.url);
      wrong.password = 'wrong';
      await expect(query(wrong.toString(), 'select 1')).rejects.toThrow(/password authentication failed/);
    } finally {
      await server.stop();
    }
  }, 60_000);

  describe('under a service', () => {
    let database: TestDatabase;
    let service: ServiceProcess;

    const createTenant = async (slug: string) =>
      fetch(`${service.urls.admin}/admin/v1/tenants`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: slug, slug, gateway: 'tap' }),
      });
    const tenantSlugs = async () => {
      const answer = await fetch(`${service.urls.admin}/admin/v1/tenants`, {
        headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
      });
      return ((await answer.json()) as { tenants: { slug: string }[] }).tenants.map((tenant) => tenant.slug).sort();
    };

    it('goes with a service killed outright, and the next start finds every answered write', async () => {
      database = copyTemplateDataDir(inject('dataDirTemplate'));
      cleanups.push(() => database.drop());
      service = await startServiceProcess(testEnv(database.target));
      cleanups.push(async () => {
        await service.stop('SIGKILL');
      });
      expect((await createTenant('kept-after-kill')).status).toBe(201);
      const server = serverPid(database.target.dataDir!);
      await service.stop('SIGKILL');
      await waitFor('the server to stop after the service was killed', () => !isRunning(server));

      service = await startServiceProcess(testEnv(database.target));
      expect(await tenantSlugs()).toEqual(['kept-after-kill']);
    }, 60_000);

    it('starts its server again when the server is killed outright', async () => {
      // The listeners answer before the start has finished (the payment worker comes last); a
      // database lost before then is a failed start, which ends the process: kill it after.
      await waitFor('the start to finish', () => service.output().includes('payment request worker started'));
      const killed = serverPid(database.target.dataDir!);
      process.kill(killed, 'SIGKILL');
      await waitFor('the server to be started again', async () => {
        const answer = await fetch(`${service.urls.admin}/readyz`).catch(() => null);
        return answer?.status === 200 && serverPid(database.target.dataDir!) !== killed;
      });
      expect((await createTenant('after-server-kill')).status).toBe(201);
      expect(await tenantSlugs()).toEqual(['after-server-kill', 'kept-after-kill']);
      expect(service.output()).toMatch(/embedded PostgreSQL server exited: starting it again/);
    }, 60_000);
  });
});
