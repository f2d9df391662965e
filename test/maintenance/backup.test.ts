// Online backups: `partnerctl backup` taken while callbacks pour in, restored by `partnerctl
// restore` into an empty database, compared table by table with the service's own: nothing the
// service acknowledged before the backup is missing, nothing appears that it never stored, and the
// restored database serves.
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { startService } from '../../src/server.js';
import { keyFingerprint } from '../../src/tenants/secret-box.js';
import { CallbackLoad, createPartner } from '../faults/support/callback-load.js';
import { adminRequests } from '../support/apps.js';
import { connectTo, createEmptyDatabase, type TestDatabase } from '../support/database.js';
import { TEST_ADMIN_TOKEN, testEnv } from '../support/env.js';
import { waitFor } from '../support/partner-endpoint.js';
import { partnerctl } from '../support/process.js';
import { useService } from '../support/service.js';

/** Tables the callback load writes to while the backup runs: compared by key, not by content. */
const WRITTEN_DURING_LOAD: Record<string, string> = {
  payment_events: 'id',
  invoices: 'id',
  trips: 'id',
  credential_usage: 'credential_id',
  audit_events: 'id',
  // Each payment worker notes every second that it is alive.
  payment_workers: 'id',
};

const service = useService();
let restored: TestDatabase;
let directory: string;
beforeAll(async () => {
  restored = await createEmptyDatabase();
  directory = mkdtempSync(path.join(tmpdir(), 'pi-backup-'));
});
afterAll(async () => {
  await restored.drop();
  rmSync(directory, { recursive: true, force: true });
});

async function tableRows(sql: postgres.Sql, table: string): Promise<Map<string, string>> {
  const key = WRITTEN_DURING_LOAD[table] ?? null;
  const rows = await sql.unsafe(`select to_jsonb(t) as row from public.${table} t`);
  return new Map(rows.map((found, i) => [key ? String(found.row[key]) : String(i), JSON.stringify(found.row)]));
}

describe('partnerctl backup and restore', () => {
  it('takes a consistent backup under callback load that restores everything acknowledged before it', {
    timeout: 180_000,
  }, async () => {
    const adminUrl = service.urls.admin!;
    const partner = await createPartner(adminUrl, 40);
    await service.admin('POST', '/operators', { name: 'Backup keeper', role: 'admin' });
    const load = new CallbackLoad(`${service.urls.integrations}/api/v1/payments/notify/`, partner, {
      rate: 150,
      concurrency: 6,
    });
    load.start();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const acknowledged = load.notifications
      .filter((sent) => sent.accepted === 'success')
      .map((sent) => sent.transactionId);
    const file = path.join(directory, 'service.pib');
    const started = Date.now();
    const backup = await partnerctl(['backup', file, '--json'], { ADMIN_URL: adminUrl, ADMIN_TOKEN: TEST_ADMIN_TOKEN });
    const backupMs = Date.now() - started;
    expect(backup.code, backup.stderr).toBe(0);
    await load.stop();
    await load.settle();
    expect(load.unexpected).toEqual([]);
    const summary = JSON.parse(backup.stdout);
    console.info(
      `backup under load: ${acknowledged.length} callbacks acknowledged before it; ${summary.rows} rows in ${summary.tables} tables, ` +
        `${(statSync(file).size / 1024 / 1024).toFixed(2)} MiB in ${backupMs} ms (partnerctl included); ${load.describe()}`,
    );
    expect(summary.bytes).toBe(statSync(file).size);
    // The backup names the key its signing secrets need: the service's SECRET_ENCRYPTION_KEY.
    const serviceKey = keyFingerprint(service.context.config.secretEncryptionKey!);
    expect(summary.sealed_with).toEqual([serviceKey]);

    // Restored where no key is configured: it says which key the service will need, and that it is not here.
    const env = { DATABASE_URL: restored.target.databaseUrl!, DATA_DIR: directory };
    const restore = await partnerctl(['restore', file], env);
    expect(restore.code, restore.stderr).toBe(0);
    expect(restore.stdout).toContain('every count checked');
    expect(restore.stdout).toContain(`open with the encryption key ${serviceKey}`);
    expect(restore.stdout).toContain(`not configured here: start the service with SECRET_ENCRYPTION_KEY set to it`);
    // Never over data: a second restore into the now full database is refused.
    const again = await partnerctl(['restore', file], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('empty database');

    const source = connectTo(service.database.target.databaseUrl!);
    const copy = connectTo(restored.target.databaseUrl!);
    try {
      const tables = (await source`select tablename from pg_tables where schemaname = 'public' order by tablename`).map(
        (row) => row.tablename as string,
      );
      for (const table of tables) {
        const [before, after] = [await tableRows(source, table), await tableRows(copy, table)];
        if (table in WRITTEN_DURING_LOAD) {
          for (const key of after.keys())
            expect(before.has(key), `${table} ${key} restored but never stored`).toBe(true);
        } else {
          expect([...after.values()].sort(), table).toEqual([...before.values()].sort());
        }
      }
      const events = new Set(
        (await copy`select transaction_id from payment_events`).map((row) => row.transaction_id as string),
      );
      const missing = acknowledged.filter((transactionId) => !events.has(transactionId));
      console.info(
        `after restore: ${acknowledged.length - missing.length} of ${acknowledged.length} found, ${events.size} events in all`,
      );
      expect(missing).toEqual([]);
      // One snapshot: an invoice is paid in the copy exactly when the copy holds its paid event.
      const torn = await copy`
        select i.id from invoices i
         where (i.status = 'paid') <> exists (select 1 from payment_events e where e.invoice_id = i.id and e.status = 'paid')`;
      expect(torn).toEqual([]);
    } finally {
      await source.end();
      await copy.end();
    }

    // The restored database serves: the same invoice, the same answer.
    const config = loadConfig(testEnv(restored.target, {}));
    const running = await startService(config, createLogger('silent'));
    try {
      const invoice = partner.invoices[0].id;
      const answer = await adminRequests(running.apps.admin)('GET', `/invoices/${invoice}`);
      expect(answer.statusCode).toBe(200);
      expect(answer.json().invoice.status).toBe('paid');
    } finally {
      await running.close();
    }
  });

  it('lets go of its connection when its client goes away before the end', { timeout: 60_000 }, async () => {
    const inUse = () => service.context.database.poolStatistics().inUse;
    const before = inUse();
    for (let i = 0; i < 3; i++) {
      await new Promise<void>((resolve, reject) => {
        const request = http.request(
          `${service.urls.admin}/admin/v1/backups`,
          { method: 'POST', headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } },
          (response) => {
            expect(response.statusCode).toBe(200);
            response.once('data', () => {
              request.destroy();
              resolve();
            });
          },
        );
        request.on('error', (error) => (request.destroyed ? undefined : reject(error)));
        request.end();
      });
    }
    await waitFor('the backups to let go of their connections', () => inUse() <= before, 20_000);
  });

  it('refuses a cut file, a foreign file, and a token below admin', { timeout: 120_000 }, async () => {
    const operator = (await service.admin('POST', '/operators', { name: 'Not an admin', role: 'operator' })).json();
    const refused = await partnerctl(['backup', path.join(directory, 'refused.pib')], {
      ADMIN_URL: service.urls.admin!,
      ADMIN_TOKEN: operator.token,
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('403');
    const nowhere = await partnerctl(['backup', path.join(directory, 'missing', 'x.pib')], {
      ADMIN_URL: service.urls.admin!,
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    });
    expect({ code: nowhere.code, stderr: nowhere.stderr.trim() }).toEqual({
      code: 1,
      stderr: expect.stringMatching(/^partnerctl: cannot write .*x\.pib\.partial: ENOENT/),
    });

    const empty = await createEmptyDatabase();
    try {
      const foreign = path.join(directory, 'foreign.pib');
      writeFileSync(foreign, 'PGDMP\n');
      const notOurs = await partnerctl(['restore', foreign], { DATABASE_URL: empty.target.databaseUrl! });
      expect(notOurs.code).toBe(1);
      expect(notOurs.stderr).toContain('not readable');
      const cut = path.join(directory, 'cut.pib');
      const whole = path.join(directory, 'whole.pib');
      expect(
        (await partnerctl(['backup', whole], { ADMIN_URL: service.urls.admin!, ADMIN_TOKEN: TEST_ADMIN_TOKEN })).code,
      ).toBe(0);
      const { readFileSync } = await import('node:fs');
      const text = readFileSync(whole, 'utf8');
      writeFileSync(cut, text.slice(0, Math.floor(text.length * 0.6)));
      const incomplete = await partnerctl(['restore', cut], { DATABASE_URL: empty.target.databaseUrl! });
      expect(incomplete.code).toBe(1);
      expect(incomplete.stderr).toMatch(/incomplete/);
    } finally {
      await empty.drop();
    }
  });
});
