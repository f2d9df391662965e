// An exclusive, pid-stamped lock file for the embedded database's directory.
import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
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
  }
}

export interface DataDirLock {
  release(): void;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function acquireDataDirLock(dataDir: string): DataDirLock {
  const lockPath = path.join(dataDir, 'partner-integrations.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockPath, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return { release: () => rmSync(lockPath, { force: true }) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holderPid = Number.parseInt(readFileSync(lockPath, 'utf8'), 10);
    if (Number.isInteger(holderPid) && isAlive(holderPid)) {
      throw new DataDirLockedError(dataDir, holderPid);
    }
    // The holder died without releasing: the lock is stale, take it over.
    rmSync(lockPath, { force: true });
  }
  throw new Error(`could not lock data directory ${dataDir}`);
}
