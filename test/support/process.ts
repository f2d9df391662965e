// The service as a real process (`partnerctl serve` from source, bundled for the run by the global
// setup), for what only processes show: start-up races, the data directory lock, signals, exit codes.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { inject } from 'vitest';
import { DEFAULT_PORTS } from '../../src/config.js';
import { projectRoot } from '../../src/paths.js';

export interface ServiceProcess {
  child: ChildProcess;
  /** Base URL per listener, read from the start-up log. */
  urls: Record<string, string>;
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** The bundle of the run (global-setup.ts), or the sources under tsx in a suite whose setup builds none (faults). */
function partnerctlEntry(): string[] {
  const bundle = inject('processBundles')?.partnerctl;
  return bundle ? [bundle] : ['--import', 'tsx', path.join(projectRoot, 'src/cli/partnerctl.ts')];
}

/**
 * Runs a command in a PID namespace of its own (pid 1 there, as in a container); every process of
 * the namespace dies with it.
 */
export const IN_PID_NAMESPACE = ['unshare', '--pid', '--fork', '--mount-proc', '--kill-child'];

/** Whether this machine lets us start a process in a PID namespace of its own (root, or user namespaces). */
export function canUnsharePid(): boolean {
  try {
    return (
      execFileSync(IN_PID_NAMESPACE[0], [...IN_PID_NAMESPACE.slice(1), 'sh', '-c', 'echo $$'], {
        encoding: 'utf8',
        stdio: 'pipe',
      }).trim() === '1'
    );
  } catch {
    return false;
  }
}

export interface RunOptions {
  /** Runs it under another command, e.g. `unshare` for a PID namespace of its own. */
  prefix?: string[];
  /**
   * The built checkout of another release (test/faults/support/releases.ts), run as an operator
   * runs it, `node dist/src/cli/partnerctl.js`; this code by default.
   */
  releaseDir?: string;
}

export function runPartnerctl(
  args: string[],
  env: Record<string, string>,
  { prefix = [], releaseDir }: RunOptions = {},
) {
  const entry = releaseDir ? [path.join(releaseDir, 'dist/src/cli/partnerctl.js')] : partnerctlEntry();
  const [command, ...commandArgs] = [...prefix, process.execPath, ...entry, ...args];
  return spawn(command, commandArgs, {
    cwd: releaseDir ?? projectRoot,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs a partnerctl command to its end: exit code and what it printed. */
export async function partnerctl(args: string[], env: Record<string, string>, prefix: string[] = []) {
  const child = runPartnerctl(args, env, { prefix });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const [code] = await once(child, 'exit');
  return { code: code as number | null, stdout, stderr };
}

/** How many listeners a service of this code starts by default (a release's may start fewer). */
const LISTENERS_OF_THIS_CODE = Object.keys(DEFAULT_PORTS).length;

/** Starts `partnerctl serve` (see RunOptions); resolves once every listener has logged its address. */
export async function startServiceProcess(
  env: Record<string, string>,
  listeners = LISTENERS_OF_THIS_CODE,
  options: RunOptions = {},
): Promise<ServiceProcess> {
  return watchService(runPartnerctl(['serve'], { ...env, LOG_LEVEL: 'info' }, options), listeners);
}

/** A started service process (however it was started); resolves once every listener has logged its address. */
export async function watchService(child: ChildProcess, listeners = LISTENERS_OF_THIS_CODE): Promise<ServiceProcess> {
  let output = '';
  const urls: Record<string, string> = {};
  const exited = once(child, 'exit');
  const started = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk;
      for (const line of output.split('\n')) {
        // A JSON line's msg, or a pretty line (LOG_FORMAT=pretty).
        const match = line.match(/(\w+) listener on (http:\/\/[^"\s]+)/);
        if (match) urls[match[1]] = match[2];
      }
      // At least: one chunk of output may carry several listeners' lines.
      if (Object.keys(urls).length >= listeners) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk) => (output += chunk));
    exited.then(([code]) => reject(new Error(`service exited with ${code} before listening:\n${output}`)));
  });
  await started;
  return {
    child,
    urls,
    output: () => output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null) return child.exitCode;
      child.kill(signal);
      const [code] = await exited;
      return code as number | null;
    },
  };
}

/** Requests to `url` the service has logged so far (one JSON line per request). */
export function loggedRequests(service: ServiceProcess, url: string): number {
  return service
    .output()
    .split('\n')
    .filter((line) => line.includes(`"url":"${url}"`)).length;
}
