// What tests run as processes (partnerctl, and the data directory lock's contenders), bundled from
// source once per run with their packages left to node_modules. Starting a bundle takes a third of
// the CPU time of running the sources under tsx, and a suite starts these dozens of times.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { projectRoot } from '../../src/paths.js';

const ENTRY_POINTS = { partnerctl: 'src/cli/partnerctl.ts', dataDirLock: 'src/db/data-dir-lock.ts' };

export type ProcessBundles = Record<keyof typeof ENTRY_POINTS, string>;

/**
 * Writes the bundles under node_modules/.cache, inside the project, so that the project root and
 * everything found from it (migrations, reference data, packages) are the same as from `src/`.
 * A directory per run: two runs in one worktree (embedded server and external PostgreSQL) do not collide.
 */
export async function buildProcessBundles(): Promise<{ files: ProcessBundles; remove(): void }> {
  const parent = path.join(projectRoot, 'node_modules/.cache');
  mkdirSync(parent, { recursive: true });
  const dir = mkdtempSync(path.join(parent, 'partner-integrations-tests-'));
  await build({
    entryPoints: Object.fromEntries(
      Object.entries(ENTRY_POINTS).map(([name, source]) => [name, path.join(projectRoot, source)]),
    ),
    outdir: dir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    logLevel: 'warning',
  });
  const files = Object.fromEntries(Object.keys(ENTRY_POINTS).map((name) => [name, path.join(dir, `${name}.mjs`)]));
  return { files: files as ProcessBundles, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
