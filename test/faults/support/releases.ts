// The last release recorded in RELEASES, checked out from this clone's history and built as an
// operator builds it, once per commit: the build is kept in the temporary directory, keyed by the
// commit, for later scenarios and runs.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { projectRoot } from '../../../src/paths.js';

export interface Release {
  version: string;
  commit: string;
}

/** The newest release in RELEASES: the one running in production while this code is rolled out. */
export function lastRecordedRelease(): Release {
  const lines = readFileSync(path.join(projectRoot, 'RELEASES'), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#'));
  const [version, commit] = lines[lines.length - 1].split(/\s+/);
  return { version, commit };
}

function run(command: string, args: string[], cwd: string): void {
  execFileSync(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 });
}

/**
 * The directory of `release` built (`npm install`, `npm run build`): its own files from
 * `git archive` (no worktree registered, nothing to clean up in the repository). `npm install`,
 * not `npm ci`: the lockfiles of releases before 1.0.0 are not in sync with their package.json.
 * One directory per Node ABI: its native addon is built for the Node that installed it.
 */
export function builtRelease(release: Release): string {
  const dir = path.join(tmpdir(), `partner-integrations-release-${release.commit}-abi${process.versions.modules}`);
  const built = path.join(dir, '.built');
  if (existsSync(built)) return dir;
  try {
    run('git', ['cat-file', '-e', `${release.commit}^{commit}`], projectRoot);
  } catch {
    throw new Error(
      `release ${release.version} (${release.commit}) is not in this clone's history: ` +
        `git fetch --unshallow, or git fetch origin ${release.commit}`,
    );
  }
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir);
  execFileSync('sh', ['-c', `git archive ${release.commit} | tar -x -C "${dir}"`], { cwd: projectRoot });
  run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], dir);
  run('npm', ['run', 'build'], dir);
  writeFileSync(built, `${new Date().toISOString()}\n`);
  return dir;
}
