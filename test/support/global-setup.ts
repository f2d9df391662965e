import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { loadConfig } from '../../src/config.js';
import { startEmbeddedServer } from '../../src/db/embedded-server.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { createLogger } from '../../src/logger.js';
import { seedEmptyDatabase } from '../../src/seed.js';
import { openContext } from '../../src/server.js';
import { createEmptyDatabase, EMBEDDED_SERVER_URL_VARIABLE, TEST_DATABASE_URL } from './database.js';
import { testEnv } from './env.js';
import { buildProcessBundles, type ProcessBundles } from './process-bundles.js';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseTemplate: string;
    /** What tests run as processes, bundled for this run (process-bundles.ts). */
    processBundles: ProcessBundles;
  }
}

/**
 * Without TEST_DATABASE_URL, one embedded server for the whole run, started the way the service
 * starts its own; test processes (started after this) find its URL in their environment.
 */
async function startRunServer(): Promise<() => Promise<void>> {
  if (TEST_DATABASE_URL) return async () => {};
  const dataDir = mkdtempSync(path.join(tmpdir(), 'pi-test-server-'));
  const server = await startEmbeddedServer(dataDir, createLogger('warn'));
  process.env[EMBEDDED_SERVER_URL_VARIABLE] = server.url;
  return async () => {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
}

export default async function setup(project: TestProject) {
  const [bundles, stopRunServer] = await Promise.all([buildProcessBundles(), startRunServer()]);
  project.provide('processBundles', bundles.files);
  const template = await createEmptyDatabase('pi_template');
  const context = await openContext(loadConfig(testEnv(template.target)));
  try {
    await migrateDatabase(context.database, () => seedEmptyDatabase(context, createLogger('silent')));
  } finally {
    await context.database.close();
  }
  project.provide('databaseTemplate', new URL(template.target.databaseUrl!).pathname.slice(1));
  return async () => {
    bundles.remove();
    await template.drop();
    await stopRunServer();
  };
}
