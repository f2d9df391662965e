// The release as the repository records it, read from the files themselves (not through src/), so
// a test comparing the service's answers with them can fail.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../src/paths.js';

export const packageVersion: string = JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')).version;
