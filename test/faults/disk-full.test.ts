// The disk filling under the embedded server, on a small tmpfs: a start on a full disk says so
// in one line; while writes fail, callbacks answer 503 (nothing acknowledged is lost) and /readyz
// turns 503 with the reason; when space returns, the service recovers by itself.
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { testEnv } from '../support/env.js';
import { partnerctl, type ServiceProcess, startServiceProcess } from '../support/process.js';
import { CallbackLoad, createPartner } from './support/callback-load.js';
import { checkInvariants, summary, withDatabase } from './support/invariants.js';
import { Prober, waitFor } from './support/probes.js';

/** Room on the tmpfs beyond the template: enough to start and serve, little enough to fill fast. */
const HEADROOM_MB = 48;

/** A tmpfs the size of the template plus the headroom, or why there cannot be one here. */
function mountTmpfs(): { mountPoint: string } | { skipped: string } {
  const mountPoint = mkdtempSync(path.join(tmpdir(), 'pi-faults-disk-'));
  const templateMb = Number(
    execFileSync('du', ['-sm', inject('dataDirTemplate')], { encoding: 'utf8' }).split('\t')[0],
  );
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${templateMb + HEADROOM_MB}m`, 'tmpfs', mountPoint], {
      stdio: 'pipe',
    });
    return { mountPoint };
  } catch (error) {
    rmSync(mountPoint, { recursive: true, force: true });
    return { skipped: `cannot mount a tmpfs here (${String((error as Error).message).split('\n')[0]})` };
  }
}

/** Writes zeros to `file` until the device is full. */
function fillDisk(file: string): void {
  const descriptor = openSync(file, 'w');
  const chunk = Buffer.alloc(1024 * 1024);
  try {
    for (;;) writeSync(descriptor, chunk);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  } finally {
    closeSync(descriptor);
  }
}

const tmpfs = mountTmpfs();
if ('skipped' in tmpfs) console.log(`[faults] disk full skipped: ${tmpfs.skipped}`);

describe.skipIf('skipped' in tmpfs)('the disk filling under the embedded server', () => {
  const mountPoint = 'mountPoint' in tmpfs ? tmpfs.mountPoint : '';
  const dataDir = path.join(mountPoint, 'data');
  const ballast = path.join(mountPoint, 'ballast');
  let service: ServiceProcess | undefined;
  afterAll(async () => {
    await service?.stop('SIGKILL');
    execFileSync('umount', [mountPoint]);
    rmSync(mountPoint, { recursive: true, force: true });
  });

  it('refuses to start on a full disk with one line about space', async () => {
    // Owners and modes kept: as root, the cluster belongs to the server's user.
    execFileSync('cp', ['-a', inject('dataDirTemplate'), dataDir]);
    fillDisk(ballast);
    const result = await partnerctl(['serve'], testEnv({ dataDir }));
    rmSync(ballast);
    console.log(`[faults] start on a full disk: exit ${result.code}, said: ${result.stderr.trim()}`);
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(
      /^partnerctl: disk full: \d+ KiB free on the device of DATA_DIR .*; free some space$/m,
    );
  });

  it('answers 503 while writes fail, loses nothing acknowledged, and recovers when space returns', async () => {
    service = await startServiceProcess(testEnv({ dataDir }));
    const { integrations, admin } = service.urls;
    const partner = await createPartner(admin, 20);
    const load = new CallbackLoad(`${integrations}/api/v1/payments/notify/`, partner, { rate: 30, concurrency: 4 });
    const readiness = new Prober(() => `${integrations}/readyz`, 200);
    load.start();
    await waitFor('a steady load', () => load.count(200) >= 30);

    const filledAt = Date.now();
    fillDisk(ballast);
    const notReady = await waitFor('/readyz 503', () => readiness.firstSince(filledAt, 503), 10_000);
    await waitFor('callbacks refused', () => load.count(503) >= 10, 10_000);
    const body = await (await fetch(`${integrations}/readyz`)).json();
    rmSync(ballast);
    const freedAt = Date.now();
    const ready = await waitFor('/readyz 200 again', () => readiness.firstSince(freedAt, 200), 20_000);
    const storedBefore = load.count(200);
    await waitFor('callbacks stored again', () => load.count(200) >= storedBefore + 20);
    await load.stop();
    await readiness.stop();
    await load.settle();
    expect(await service.stop('SIGTERM')).toBe(0);
    service = undefined;

    const report = await withDatabase({ dataDir }, (query) => checkInvariants(query, partner, load));
    console.log(
      summary(
        'disk full (embedded server on tmpfs)',
        load,
        report,
        `/readyz 503 ${notReady.at - filledAt} ms after the disk filled ` +
          `(${JSON.stringify(body)}), 200 again ${ready.at + ready.ms - freedAt} ms after space returned`,
      ),
    );
    expect(body).toMatchObject({ status: 'unavailable', reason: 'disk_full' });
    expect(report.violations).toEqual([]);
    expect([...load.answered.keys()].sort()).toEqual(['200', '503']);
  });
});
