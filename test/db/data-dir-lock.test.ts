// The embedded database's directory lock: one holder at a time, even when several processes take
// over a stale lock at once; a lock left by a crashed run is stale even when it carries this
// process's own pid (pid 1 in every container start); a holder still exiting is waited for.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, inject, it } from 'vitest';
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

/** A process that loads the lock module, says `ready`, and on a start time written to its stdin takes the lock then. */
interface Contender {
  child: ChildProcess;
  output(): string;
}

/**
 * The contender holds a lock it took for `holdMs`, or until its stdin is closed when none is
 * given; it prints `acquired`, `locked` or `error ...`.
 */
function contender(dataDir: string, holdMs?: number): Contender {
  const module = inject('processBundles').dataDirLock;
  const release =
    holdMs === undefined
      ? "process.stdin.on('end', () => lock.release())"
      : `setTimeout(() => lock.release(), ${holdMs})`;
  const code = `
    const { acquireDataDirLock } = await import(${JSON.stringify(module)});
    process.stdin.once('data', (startAt) => {
      while (Date.now() < Number(String(startAt))) {}
      try {
        const lock = acquireDataDirLock(${JSON.stringify(dataDir)});
        console.log('acquired');
        ${release};
      } catch (error) {
        console.log(error.name === 'DataDirLockedError' ? 'locked' : 'error ' + error.message);
        process.stdin.destroy();
      }
    });
    console.log('ready');`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], {
    cwd: projectRoot,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  return { child, output: () => output };
}

async function waitForOutput(contender: Contender, pattern: RegExp): Promise<string> {
  for (;;) {
    const match = contender.output().match(pattern);
    if (match) return match[0];
    if (contender.child.exitCode !== null) throw new Error(`contender exited: ${contender.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Starts the contenders at one instant once all have loaded; their outcomes, once all have one. */
async function race(contenders: Contender[]): Promise<string[]> {
  await Promise.all(contenders.map((one) => waitForOutput(one, /^ready$/m)));
  const startAt = Date.now() + 100;
  for (const one of contenders) one.child.stdin!.write(`${startAt}\n`);
  // Holders hold until every loser has given up waiting for them; then all are let go.
  const outcomes = await Promise.all(contenders.map((one) => waitForOutput(one, /^(acquired|locked|error .*)$/m)));
  await Promise.all(
    contenders.map((one) => {
      one.child.stdin!.end();
      return one.child.exitCode === null ? once(one.child, 'exit') : undefined;
    }),
  );
  return outcomes;
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
    // The rounds run side by side, each on a directory of its own.
    const results = await Promise.all(
      Array.from({ length: rounds }, async () => {
        const dir = freshDir();
        writeFileSync(path.join(dir, LOCK_FILE), String(await deadPid()));
        return race(Array.from({ length: contenders }, () => contender(dir)));
      }),
    );
    for (const round of results) {
      expect(
        round.every((result) => result === 'acquired' || result === 'locked'),
        round.join(','),
      ).toBe(true);
    }
    expect(results.map((round) => round.filter((result) => result === 'acquired').length)).toEqual(
      Array(rounds).fill(1),
    );
  }, 120_000);

  it('waits for a holder that is still exiting, and refuses a live one after the wait', async () => {
    const dir = freshDir();
    const holder = contender(dir, 1000);
    await waitForOutput(holder, /^ready$/m);
    holder.child.stdin!.write(`${Date.now()}\n`);
    await waitForOutput(holder, /^acquired$/m);
    const started = Date.now();
    const lock = acquireDataDirLock(dir);
    expect(Date.now() - started).toBeGreaterThan(300);
    lock.release();

    const live = contender(dir);
    await waitForOutput(live, /^ready$/m);
    live.child.stdin!.write(`${Date.now()}\n`);
    await waitForOutput(live, /^acquired$/m);
    expect(() => acquireDataDirLock(dir)).toThrow(DataDirLockedError);
    live.child.kill('SIGKILL');
    await once(live.child, 'exit');
    // Killed without releasing: its lock is stale now and is taken over.
    acquireDataDirLock(dir).release();
  }, 30_000);
});
