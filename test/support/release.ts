// The release as the repository records it, read from the files themselves (not through src/), so
// a test comparing the service's answers with them can fail.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../src/paths.js';

export const packageVersion: string = JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')).version;

/** The commit checked out here, as git itself says it. */
export const checkedOutCommit: string = execFileSync('git', ['rev-parse', 'HEAD'], {
  cwd: projectRoot,
  encoding: 'utf8',
}).trim();
