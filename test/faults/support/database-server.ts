// The PostgreSQL server of a scenario as processes: its postmaster (postmaster.pid in its data
// directory) and the backends it started, to stop, kill or freeze (SIGSTOP) from outside, on the
// suite's cluster and on a service's embedded server alike.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { CLUSTER_DIR_NAME } from '../../../src/db/embedded-server.js';

/** The cluster directory of a scenario's database: the suite's cluster's, or the embedded server's in DATA_DIR. */
export function clusterDirOf(target: { dataDir?: string }, clusterDataDir: string | undefined): string {
  return target.dataDir ? path.join(target.dataDir, CLUSTER_DIR_NAME) : clusterDataDir!;
}

/** The postmaster running in `clusterDir` and whether it accepts connections; null when none is. */
export function postmasterOf(clusterDir: string): { pid: number; ready: boolean } | null {
  let lines: string[];
  try {
    lines = readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n');
  } catch {
    return null;
  }
  const pid = Number(lines[0]);
  try {
    process.kill(pid, 0);
  } catch {
    return null;
  }
  return { pid, ready: lines[7]?.trim() === 'ready' };
}

/** Sends `signal` to the postmaster of `clusterDir` and every process it started; the pids signalled. */
export function signalServer(clusterDir: string, signal: NodeJS.Signals): number[] {
  const postmaster = postmasterOf(clusterDir);
  if (!postmaster) throw new Error(`no PostgreSQL server runs in ${clusterDir}`);
  let children: number[] = [];
  try {
    children = execFileSync('pgrep', ['-P', String(postmaster.pid)], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    // pgrep exits 1 when the postmaster has no child
  }
  const pids = [postmaster.pid, ...children];
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch (error) {
      // A backend ended since it was listed (the postmaster, signalled first, may end them).
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
    }
  }
  return pids;
}
