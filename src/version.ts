// The release this code is (package.json's `version`, a semantic version): answered on /healthz
// and written in every OpenAPI document, so a partner or operator can tell which build answers.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from './paths.js';

export const SERVICE_VERSION: string = JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')).version;
