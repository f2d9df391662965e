// The embedded database's directory lock: one holder at a time, even when several processes take
// over a stale lock at once; a lock left by a crashed run is stale even when it carries this
// process's own pid (pid 1 in every container start); a holder still exiting is waited for.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireDataDirLock, DataDirLockedError } from '../../src/db/data-dir-lock.js';
import { projectRoot } from '../../src/paths.js';

const LOCK_FILE = 'partner-integrations.lock';
const freshDir = () => mkdtempSync(path.join(tmpdir(), 'pi-lock-'));

/** A pid that no process has: one of a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await once(child, 'exit');
  return child.pid!;
}

/** A process that takes the lock at `startAt` (ms since epoch), holds it `holdMs`, and prints the outcome. */
function contender(dataDir: string, startAt: number, holdMs: number): ChildProcess {
  const module = path.join(projectRoot, 'src/db/data-dir-lock.ts');
  const code = `
    const { acquireDataDirLock } = await import(${JSON.stringify(module)});
    while (Date.now() < ${startAt}) {}
    try {
      const lock = acquireDataDirLock(${JSON.stringify(dataDir)});
      console.log('acquired');
      setTimeout(() => lock.release(), ${holdMs});
    } catch (error) {
      console.log(error.name === 'DataDirLockedError' ? 'locked' : 'error ' + error.message);
    }`;
  return spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    cwd: projectRoot,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

async function outcome(child: ChildProcess): Promise<string> {
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  await once(child, 'exit');
  return output.trim();
}

describe('data directory lock', () => {
  it('takes over a lock stamped with its own pid, as a container restart after a crash leaves it', () => {
    const dir = freshDir();
    writeFileSync(path.join(dir, LOCK_FILE), String(process.pid));
    const lock = acquireDataDirLock(dir);
    expect(readFileSync(path.join(dir, LOCK_FILE), 'utf8')).toBe(String(process.pid));
    // Held by this process now: a second open here is refused, not taken over.
    expect(() => acquireDataDirLock(dir)).toThrow(DataDirLockedError);
    lock.release();
  });

  it('lets exactly one of several processes take over a stale lock at once, round after round', async () => {
    const rounds = 3;
    const contenders = 5;
    const acquiredPerRound: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const dir = freshDir();
      writeFileSync(path.join(dir, LOCK_FILE), String(await deadPid()));
      // They start together once all have loaded; each holds the lock past the others' wait.
      const startAt = Date.now() + 2500;
      const results = await Promise.all(
        Array.from({ length: contenders }, () => outcome(contender(dir, startAt, 4000))),
      );
      expect(
        results.every((result) => result === 'acquired' || result === 'locked'),
        results.join(','),
      ).toBe(true);
      acquiredPerRound.push(results.filter((result) => result === 'acquired').length);
    }
    expect(acquiredPerRound).toEqual(Array(rounds).fill(1));
  }, 120_000);

  it('waits for a holder that is still exiting, and refuses a live one after the wait', async () => {
    const dir = freshDir();
    const holder = contender(dir, Date.now(), 1000);
    let holderOutput = '';
    holder.stdout!.on('data', (chunk) => (holderOutput += chunk));
    while (!holderOutput.includes('acquired')) await new Promise((resolve) => setTimeout(resolve, 20));
    const started = Date.now();
    const lock = acquireDataDirLock(dir);
    expect(Date.now() - started).toBeGreaterThan(300);
    lock.release();

    const live = contender(dir, Date.now(), 10_000);
    let liveOutput = '';
    live.stdout!.on('data', (chunk) => (liveOutput += chunk));
    while (!liveOutput.includes('acquired')) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(() => acquireDataDirLock(dir)).toThrow(DataDirLockedError);
    live.kill('SIGKILL');
    await once(live, 'exit');
    // Killed without releasing: its lock is stale now and is taken over.
    acquireDataDirLock(dir).release();
  }, 30_000);
});
