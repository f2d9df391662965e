// A generated ADMIN_TOKEN is kept in DATA_DIR: the next start reuses it (console sessions and
// exported tokens survive a restart), and partnerctl run beside the data finds it, or says where
// it looked.
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { startService } from '../../src/server.js';
import { copyTemplateDatabase } from '../support/database.js';
import { testEnv } from '../support/env.js';
import { partnerctl } from '../support/process.js';

const dataDir = mkdtempSync(path.join(tmpdir(), 'pi-admin-token-'));
const elsewhere = mkdtempSync(path.join(tmpdir(), 'pi-admin-token-empty-'));
afterAll(() => {
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(elsewhere, { recursive: true, force: true });
});

describe('a generated admin token', () => {
  it('is kept in DATA_DIR, reused by the next start, and found by partnerctl beside the data', async () => {
    const database = await copyTemplateDatabase(inject('databaseTemplate'));
    const env = testEnv(database.target, { DATA_DIR: dataDir });
    delete env.ADMIN_TOKEN;
    try {
      const first = loadConfig(env, false);
      const running = await startService(first, createLogger('silent'));
      const file = path.join(dataDir, 'admin-token');
      try {
        expect(readFileSync(file, 'utf8').trim()).toBe(first.adminToken);
        expect(statSync(file).mode & 0o777).toBe(0o600);
        const cli = await partnerctl(['operators', 'list', '--json'], {
          DATA_DIR: dataDir,
          ADMIN_URL: running.urls.admin!,
        });
        expect(cli.code, cli.stderr).toBe(0);
        expect(JSON.parse(cli.stdout).operators).toEqual([]);
        const lost = await partnerctl(['operators', 'list'], { DATA_DIR: elsewhere, ADMIN_URL: running.urls.admin! });
        expect(lost.code).toBe(1);
        expect(lost.stderr).toContain(path.join(elsewhere, 'admin-token'));
      } finally {
        await running.close();
      }
      expect(loadConfig(env, false).adminToken).toBe(first.adminToken);
    } finally {
      await database.drop();
    }
  });
});
