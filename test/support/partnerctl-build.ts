// partnerctl for the tests that run it as a process: bundled from source once per run, its
// packages left to node_modules. Starting the bundle takes a third of the CPU time of running the
// sources under tsx, and suites start partnerctl dozens of times.
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { projectRoot } from '../../src/paths.js';

/**
 * Writes the bundle under node_modules/.cache, inside the project, so that the project root and
 * everything it finds from there (migrations, reference data, packages) are the same as from
 * `src/`. One file per run: two runs in one worktree (PGlite and PostgreSQL) do not collide.
 */
export async function buildPartnerctl(): Promise<{ file: string; remove(): void }> {
  const dir = path.join(projectRoot, 'node_modules/.cache/partner-integrations-tests');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `partnerctl-${process.pid}.mjs`);
  await build({
    entryPoints: [path.join(projectRoot, 'src/cli/partnerctl.ts')],
    outfile: file,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    logLevel: 'warning',
  });
  return { file, remove: () => rmSync(file, { force: true }) };
}
