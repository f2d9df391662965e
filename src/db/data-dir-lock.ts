// An exclusive, pid-stamped lock file for the embedded database's directory.
//
// Taking a stale lock over is the delicate part: two processes that both find the holder dead
// must not both end up holding it (PGlite would corrupt the directory silently). So a take-over
// first claims a second file with an exclusive create, and only its claimant removes the stale
// lock and creates its own, exclusively again. A lock stamped with this process's own pid is
// stale too: in a container the service is pid 1 on every start, so the lock of the run that
// crashed carries the pid of the run that reads it.
import { randomBytes } from 'node:crypto';
import { linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export class DataDirLockedError extends Error {
  constructor(
    readonly dataDir: string,
    readonly holderPid: number,
  ) {
    super(
      `data directory ${dataDir} is in use by another process (pid ${holderPid}); ` +
        'stop it, or give this one another DATA_DIR or a DATABASE_URL',
    );
    this.name = 'DataDirLockedError';
  }
}

interface DataDirLock {
  release(): void;
}

/** How long to wait for a holder that is still exiting (a restart right after a kill). */
const DYING_HOLDER_WAIT_MS = 3000;
const POLL_MS = 50;

function isAlive(pid: number): boolean {
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Creates `file` holding this process's pid, or returns false when it exists. The pid is written
 * to a file of this process's own first and linked into place, so the file never exists empty.
 */
function createExclusively(file: string): boolean {
  const draft = `${file}.${process.pid}.${randomBytes(6).toString('hex')}`;
  writeFileSync(draft, String(process.pid), { mode: 0o600 });
  try {
    linkSync(draft, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    rmSync(draft, { force: true });
  }
}

function holderOf(file: string): number | null {
  try {
    const pid = Number.parseInt(readFileSync(file, 'utf8'), 10);
    return Number.isInteger(pid) ? pid : null;
  } catch {
    return null; // gone meanwhile
  }
}

const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** Locks this process holds: its own pid in a lock file means stale only when it is not one of these. */
const heldHere = new Set<string>();

function held(lockPath: string): DataDirLock {
  heldHere.add(lockPath);
  return {
    release: () => {
      heldHere.delete(lockPath);
      rmSync(lockPath, { force: true });
    },
  };
}

/**
 * Removes the stale lock and creates this process's own, under an exclusive claim so that two
 * processes never both do it. False when another claimant is at it, or was faster.
 */
function takeOver(lockPath: string, claimPath: string): boolean {
  // Only a claimant that died inside these few lines leaves a claim behind: stale like a lock.
  const claimant = holderOf(claimPath);
  if (claimant !== null && !isAlive(claimant)) rmSync(claimPath, { force: true });
  if (!createExclusively(claimPath)) return false;
  try {
    // Re-read under the claim: another claimant may have taken it over just before.
    const current = holderOf(lockPath);
    if (current !== null && isAlive(current)) return false;
    rmSync(lockPath, { force: true });
    return createExclusively(lockPath);
  } finally {
    rmSync(claimPath, { force: true });
  }
}

export function acquireDataDirLock(dataDir: string): DataDirLock {
  const lockPath = path.join(dataDir, 'partner-integrations.lock');
  if (heldHere.has(lockPath)) throw new DataDirLockedError(dataDir, process.pid);
  const claimPath = `${lockPath}.takeover`;
  const deadline = Date.now() + DYING_HOLDER_WAIT_MS;
  for (;;) {
    if (createExclusively(lockPath)) return held(lockPath);
    const holder = holderOf(lockPath);
    const dead = holder === null || !isAlive(holder);
    if (dead && takeOver(lockPath, claimPath)) return held(lockPath);
    if (!dead && Date.now() >= deadline) throw new DataDirLockedError(dataDir, holder!);
    sleep(POLL_MS);
  }
}
