// Which build answers: the release (package.json's `version`, a semantic version), answered on
// /healthz and written in every OpenAPI document, and the commit the build was made from,
// answered on /healthz, so an operator can confirm that an upgrade took.
import { execFileSync } from 'node:child_process';
import { readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { projectRoot } from './paths.js';

const PACKAGE: { name: string; version: string } = JSON.parse(
  readFileSync(path.join(projectRoot, 'package.json'), 'utf8'),
);
export const SERVICE_VERSION = PACKAGE.version;
/** The service's name where it names itself (package.json's `name`): its traces' service.name by default. */
export const SERVICE_NAME = PACKAGE.name;

/** A commit as /healthz names it: 7 to 40 hex digits, or this. */
export const UNKNOWN_COMMIT = 'unknown';
const COMMIT = /^[0-9a-f]{7,40}$/;

export const isCommit = (text: string): boolean => COMMIT.test(text);
/** `git` at start is bounded: a commit is not worth a slow start. */
const GIT_TIMEOUT_MS = 5000;

/**
 * The commit checked out at `root`, when `root` is the top of a git checkout (a copy of the build
 * inside some other repository is not that repository's commit); else `unknown`.
 */
export function checkoutCommit(root: string): string {
  try {
    const [top, head] = execFileSync('git', ['rev-parse', '--show-toplevel', 'HEAD'], {
      cwd: root,
      encoding: 'utf8',
      timeout: GIT_TIMEOUT_MS,
      stdio: ['ignore', 'pipe', 'ignore'],
    })
      .trim()
      .split('\n');
    return realpathSync(top) === realpathSync(root) && isCommit(head) ? head : UNKNOWN_COMMIT;
  } catch {
    return UNKNOWN_COMMIT;
  }
}

/** Written beside the built code by `npm run build` (scripts/write-build-commit.mjs). */
export const BUILD_COMMIT_FILE = 'build-commit';

/**
 * The built code names the commit it was built from (the checkout may have moved since, or be
 * absent where the build was shipped); code run from source reads the checkout it is in.
 */
function serviceCommit(): string {
  let written: string;
  try {
    written = readFileSync(fileURLToPath(new URL(BUILD_COMMIT_FILE, import.meta.url)), 'utf8').trim();
  } catch {
    return checkoutCommit(projectRoot);
  }
  return isCommit(written) ? written : UNKNOWN_COMMIT;
}

export const SERVICE_COMMIT: string = serviceCommit();
