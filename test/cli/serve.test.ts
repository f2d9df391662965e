import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import {
  copyTemplateDatabase,
  copyTemplateDataDir,
  createEmptyDatabase,
  TEST_DATABASE_URL,
  type TestDatabase,
} from '../support/database.js';
import { TEST_ADMIN_TOKEN, testEnv } from '../support/env.js';
import {
  canUnsharePid,
  IN_PID_NAMESPACE,
  partnerctl,
  type ServiceProcess,
  startServiceProcess,
} from '../support/process.js';

const databases: TestDatabase[] = [];
const processes: ServiceProcess[] = [];
afterAll(async () => {
  await Promise.all(processes.map((service) => service.stop('SIGKILL')));
  await Promise.all(databases.map((database) => database.drop()));
});

async function templateCopy() {
  const database = await copyTemplateDatabase(inject('databaseTemplate'));
  databases.push(database);
  return database;
}

/** A DATA_DIR of its own, for a service running its embedded server there. */
function dataDirCopy() {
  const database = copyTemplateDataDir(inject('dataDirTemplate'));
  databases.push(database);
  return database;
}

async function serve(env: Record<string, string>, prefix: string[] = []) {
  const service = await startServiceProcess(env, undefined, { prefix });
  processes.push(service);
  return service;
}

async function ready(url: string) {
  return (await fetch(`${url}/readyz`)).status;
}

describe('partnerctl serve', () => {
  it('starts every listener, answers /readyz, and stops on SIGTERM with exit code 0', async () => {
    const database = await templateCopy();
    const service = await serve(testEnv(database.target));
    for (const listener of ['integrations', 'backend', 'admin', 'portal'])
      expect(await ready(service.urls[listener])).toBe(200);
    expect(await service.stop('SIGTERM')).toBe(0);
  });

  it('prints the tenant and its secrets as JSON with `tenants create --json`', async () => {
    const database = await templateCopy();
    const service = await serve(testEnv(database.target));
    const result = await partnerctl(
      ['tenants', 'create', '--name', 'Acme Travel', '--slug', 'acme', '--gateway', 'tap', '--json'],
      { ADMIN_URL: service.urls.admin, ADMIN_TOKEN: TEST_ADMIN_TOKEN },
    );
    expect(result.code).toBe(0);
    const created = JSON.parse(result.stdout);
    expect(created.tenant).toMatchObject({ slug: 'acme', name: 'Acme Travel', gateway: 'tap', is_active: true });
    expect(created.credentials.sso_hmac_secret).toMatch(/^pis_sso_/);
    expect(created.credentials.partner_api_key).toMatch(/^pis_pay_/);
    expect(created.credentials.payment_endpoint_secret).toMatch(/^whsec_/);

    const duplicate = await partnerctl(['tenants', 'create', '--name', 'Again', '--slug', 'acme', '--gateway', 'tap'], {
      ADMIN_URL: service.urls.admin,
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    });
    expect(duplicate.code).toBe(1);
    expect(duplicate.stderr.trim()).toBe('partnerctl: 409 CONFLICT A tenant with slug "acme" already exists.');

    const listed = await partnerctl(['tenants', 'list'], {
      ADMIN_URL: service.urls.admin,
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    });
    expect(listed.stdout).toMatch(/^ID\s+SLUG\s+NAME/);
    expect(listed.stdout).toContain('acme');
  });

  it.skipIf(TEST_DATABASE_URL || !canUnsharePid())(
    'refuses a second service on one DATA_DIR from another PID namespace; the first keeps serving',
    async () => {
      const database = dataDirCopy();
      // Each in a PID namespace of its own, pid 1 there, as two containers on one volume.
      const first = await serve(testEnv(database.target), IN_PID_NAMESPACE);
      const second = await partnerctl(['serve'], testEnv(database.target), IN_PID_NAMESPACE);
      expect(second.code).toBe(1);
      expect(second.stderr.trim()).toMatch(
        new RegExp(
          `^partnerctl: data directory ${database.target.dataDir} is in use by another process ` +
            `\\(pid 1 on \\S+ since [\\dT:.Z-]+\\); stop it, or give this one another DATA_DIR or a DATABASE_URL$`,
        ),
      );
      expect(await ready(first.urls.admin)).toBe(200);
      expect(await ready(first.urls.integrations)).toBe(200);
    },
  );

  it.skipIf(!TEST_DATABASE_URL)(
    'brings up four processes started at once on one fresh PostgreSQL database',
    async () => {
      const database = await createEmptyDatabase('pi_race');
      databases.push(database);
      const services = await Promise.all([1, 2, 3, 4].map(() => serve(testEnv(database.target))));
      for (const service of services) {
        for (const url of Object.values(service.urls)) expect(await ready(url)).toBe(200);
      }
    },
    120_000,
  );
});

describe('partnerctl migrate', () => {
  it('opens the database and nothing else: migrations applied, no key file written', async () => {
    const database = await createEmptyDatabase('pi_migrate');
    databases.push(database);
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), 'pi-migrate-')), 'data');
    const { SECRET_ENCRYPTION_KEY: _unset, ...env } = testEnv(database.target);
    const result = await partnerctl(['migrate', '--json'], { ...env, DATA_DIR: dataDir });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ migrated: true });
    expect(existsSync(path.join(dataDir, 'secret-encryption.key'))).toBe(false);
  });
});

describe('logs', () => {
  it('LOG_FORMAT=pretty prints one readable line per request and no JSON', async () => {
    const database = await templateCopy();
    const service = await serve(testEnv(database.target, { LOG_FORMAT: 'pretty' }));
    expect(await ready(service.urls.backend)).toBe(200);
    expect((await fetch(`${service.urls.backend}/v1/countries/`)).status).toBe(401);
    expect(await service.stop('SIGTERM')).toBe(0);
    const lines = service.output().trim().split('\n');
    expect(lines.filter((line) => line.trimStart().startsWith('{'))).toEqual([]);
    expect(lines.some((line) => /INFO.*\[backend\] GET \/v1\/countries\/ 401 [\d.]+ms/.test(line))).toBe(true);
    expect(lines.some((line) => /backend listener on http:\/\/127\.0\.0\.1:\d+/.test(line))).toBe(true);
  });
});

describe('configuration errors', () => {
  it.each([
    [
      { INTEGRATIONS_PORT: 'eighty' },
      'partnerctl: INTEGRATIONS_PORT must be a port number from 0 to 65535, got "eighty"',
    ],
    [
      { LOG_LEVEL: 'loud' },
      'partnerctl: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"',
    ],
    [{ DATABASE_URL: 'mysql://x' }, 'partnerctl: DATABASE_URL must be a postgres: or postgresql: URL, got "mysql:"'],
    [
      { LISTENERS: 'integrations,web' },
      'partnerctl: LISTENERS may name integrations, backend, admin, portal; got "web"',
    ],
  ])('%o stops the process with one readable line', async (env, message) => {
    const result = await partnerctl(['serve'], env);
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe(message);
  });

  it.each([
    [
      ['trips', 'create', '--tenant', 'T', '--title', 'x', '--file', 'BAD_JSON'],
      /^partnerctl: .*bad\.json is not JSON: /,
    ],
    [
      ['default-prompts', 'set', 'en', '--file', '/nonexistent/prompts.txt'],
      /^partnerctl: cannot read \/nonexistent\/prompts\.txt: ENOENT/,
    ],
    [
      ['simulate', 'notify', '--invoice', 'x', '--status', 'paid', '--api-key', 'k', '--url', 'notaurl'],
      /^partnerctl: notaurl is not a URL/,
    ],
  ])('says a mistake with %o in one line, not as a database out of reach', async (args, message) => {
    const badJson = path.join(mkdtempSync(path.join(tmpdir(), 'pi-cli-')), 'bad.json');
    writeFileSync(badJson, '{"title": ');
    const result = await partnerctl(
      args.map((arg) => (arg === 'BAD_JSON' ? badJson : arg)),
      { ADMIN_TOKEN: 'x'.repeat(40), ADMIN_URL: 'http://127.0.0.1:1' },
    );
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual([expect.stringMatching(message)]);
  });

  it('names an unreachable DATABASE_URL without its password, in one line', async () => {
    const result = await partnerctl(['serve'], {
      DATABASE_URL: 'postgres://app:hunter2@127.0.0.1:1/app',
      SECRET_ENCRYPTION_KEY: '00'.repeat(32),
    });
    expect(result.code).toBe(1);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^partnerctl: cannot reach DATABASE_URL postgres:\/\/app:\*\*\*@127\.0\.0\.1:1\/app: /);
    expect(result.stderr).not.toContain('hunter2');
  });
});
