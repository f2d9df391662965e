import type { TestProject } from 'vitest/node';
import { loadConfig } from '../../src/config.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { createLogger } from '../../src/logger.js';
import { seedEmptyDatabase } from '../../src/seed.js';
import { openContext } from '../../src/server.js';
import { createEmptyDatabase, TEST_DATABASE_URL } from './database.js';
import { testEnv } from './env.js';
import { buildProcessBundles, type ProcessBundles } from './process-bundles.js';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseTemplate: string;
    /** What tests run as processes, bundled for this run (process-bundles.ts). */
    processBundles: ProcessBundles;
  }
}

export default async function setup(project: TestProject) {
  const bundles = await buildProcessBundles();
  project.provide('processBundles', bundles.files);
  const template = await createEmptyDatabase('pi_template');
  const context = await openContext(loadConfig(testEnv(template.target)));
  try {
    await migrateDatabase(context.database, () => seedEmptyDatabase(context, createLogger('silent')));
  } finally {
    await context.database.close();
  }
  const { databaseUrl, dataDir } = template.target;
  project.provide('databaseTemplate', TEST_DATABASE_URL ? new URL(databaseUrl!).pathname.slice(1) : dataDir!);
  return async () => {
    bundles.remove();
    await template.drop();
  };
}
