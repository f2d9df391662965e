// One writer per DATA_DIR: an exclusive flock(2) on a file in it, held on an open file.
//
// The kernel lets the lock go when the last descriptor of that open file closes, however its
// holders ended (exit, kill -9, a crashed container), and it is the same lock seen from every PID
// namespace: two containers on one volume cannot both hold it, and no PID decides whether a lock
// is stale. The embedded database server inherits the descriptor, so the directory stays locked
// until the service and its server are both gone. The file itself is never removed: a process
// that opened it just before would lock an unlinked file while a third locked a new one.
import { closeSync, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import fsExt from 'fs-ext';

export class DataDirLockedError extends Error {
  constructor(
    readonly dataDir: string,
    holder: string,
  ) {
    super(
      `data directory ${dataDir} is in use by another process${holder ? ` (${holder})` : ''}; ` +
        'stop it, or give this one another DATA_DIR or a DATABASE_URL',
    );
    this.name = 'DataDirLockedError';
  }
}

export interface DataDirLock {
  /** The locked file's descriptor: a child process handed it holds the lock with this one. */
  fd: number;
  release(): void;
}

export const LOCK_FILE_NAME = 'partner-integrations.lock';
/** How long to wait for a holder that is still exiting (a restart right after a stop or a kill). */
const DYING_HOLDER_WAIT_MS = 10_000;
const POLL_MS = 100;

function tryLock(fd: number): boolean {
  try {
    fsExt.flockSync(fd, 'exnb');
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EAGAIN' || code === 'EWOULDBLOCK') return false;
    throw error;
  }
}

/**
 * Takes the lock of `dataDir`, waiting up to `waitMs` for a holder to let go; a
 * DataDirLockedError naming the holder (as it described itself) when it does not.
 */
export async function acquireDataDirLock(dataDir: string, waitMs = DYING_HOLDER_WAIT_MS): Promise<DataDirLock> {
  const lockPath = path.join(dataDir, LOCK_FILE_NAME);
  const fd = openSync(lockPath, 'a+', 0o600);
  try {
    const deadline = Date.now() + waitMs;
    while (!tryLock(fd)) {
      if (Date.now() >= deadline) throw new DataDirLockedError(dataDir, readFileSync(lockPath, 'utf8').trim());
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  // Who holds it, for the message of whoever finds it taken: informative only, never trusted.
  ftruncateSync(fd);
  writeSync(fd, `pid ${process.pid} on ${hostname()} since ${new Date().toISOString()}\n`);
  let released = false;
  return {
    fd,
    release() {
      if (released) return;
      released = true;
      closeSync(fd);
    },
  };
}
