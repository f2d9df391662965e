// The data directory lock: one holder at a time, whichever PID namespace each contender runs in;
// a holder killed outright lets go at once; a holder still exiting is waited for.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { acquireDataDirLock, DataDirLockedError } from '../../src/db/data-dir-lock.js';
import { projectRoot } from '../../src/paths.js';
import { canUnsharePid, IN_PID_NAMESPACE } from '../support/process.js';

const freshDir = () => mkdtempSync(path.join(tmpdir(), 'pi-lock-'));

interface Contender {
  child: ChildProcess;
  output(): string;
}

/**
 * A process that takes the lock at the instant written to its stdin (without waiting for a
 * holder), prints its pid as it sees it and `acquired`, `locked` or `error ...`, and holds what
 * it took until its stdin closes. `prefix` runs it under another command (unshare).
 */
function contender(dataDir: string, prefix: string[] = []): Contender {
  const module = inject('processBundles').dataDirLock;
  const code = `
    const { acquireDataDirLock } = await import(${JSON.stringify(module)});
    console.log('pid ' + process.pid);
    process.stdin.once('data', async (startAt) => {
      while (Date.now() < Number(String(startAt))) {}
      try {
        const lock = await acquireDataDirLock(${JSON.stringify(dataDir)}, 0);
        console.log('acquired');
        process.stdin.on('end', () => lock.release());
      } catch (error) {
        console.log(error.name === 'DataDirLockedError' ? 'locked' : 'error ' + error.message);
        process.stdin.destroy();
      }
    });
    console.log('ready');`;
  const [command, ...args] = [...prefix, process.execPath, '--input-type=module', '-e', code];
  const child = spawn(command, args, { cwd: projectRoot, stdio: ['pipe', 'pipe', 'inherit'] });
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

/** Starts the contenders at one instant once all have loaded; their outcomes, once all have one, then lets all go. */
async function race(contenders: Contender[]): Promise<string[]> {
  await Promise.all(contenders.map((one) => waitForOutput(one, /^ready$/m)));
  const startAt = Date.now() + 100;
  for (const one of contenders) one.child.stdin!.write(`${startAt}\n`);
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
  it('refuses a second holder in the same process, naming the holder', async () => {
    const dir = freshDir();
    const lock = await acquireDataDirLock(dir);
    const refusal = await acquireDataDirLock(dir, 0).catch((error) => error);
    expect(refusal).toBeInstanceOf(DataDirLockedError);
    expect(refusal.message).toMatch(
      new RegExp(`^data directory ${dir} is in use by another process \\(pid ${process.pid} on .+ since .+\\); `),
    );
    lock.release();
    (await acquireDataDirLock(dir, 0)).release();
  });

  it('lets exactly one of several processes take it at once, round after round', async () => {
    const rounds = 3;
    const results = await Promise.all(
      Array.from({ length: rounds }, () => {
        const dir = freshDir();
        return race(Array.from({ length: 5 }, () => contender(dir)));
      }),
    );
    for (const round of results)
      expect([...round].sort()).toEqual(['acquired', 'locked', 'locked', 'locked', 'locked']);
  }, 60_000);

  it.skipIf(!canUnsharePid())(
    'lets one of two processes in separate PID namespaces take it, each pid 1 in its own',
    async () => {
      const dir = freshDir();
      const namespaced = () => contender(dir, IN_PID_NAMESPACE);
      const contenders = [namespaced(), namespaced()];
      await Promise.all(contenders.map((one) => waitForOutput(one, /^ready$/m)));
      expect(contenders.map((one) => one.output().match(/^pid (\d+)$/m)?.[1])).toEqual(['1', '1']);
      expect([...(await race(contenders))].sort()).toEqual(['acquired', 'locked']);
    },
    30_000,
  );

  it('is free once a holder is killed outright, and waits for a holder that lets go', async () => {
    const dir = freshDir();
    const holder = contender(dir);
    await waitForOutput(holder, /^ready$/m);
    holder.child.stdin!.write(`${Date.now()}\n`);
    await waitForOutput(holder, /^acquired$/m);
    holder.child.kill('SIGKILL');
    await once(holder.child, 'exit');
    (await acquireDataDirLock(dir, 0)).release();

    const releasing = contender(dir);
    await waitForOutput(releasing, /^ready$/m);
    releasing.child.stdin!.write(`${Date.now()}\n`);
    await waitForOutput(releasing, /^acquired$/m);
    setTimeout(() => releasing.child.stdin!.end(), 500);
    const started = Date.now();
    (await acquireDataDirLock(dir, 5000)).release();
    expect(Date.now() - started).toBeGreaterThan(300);
  }, 30_000);
});
