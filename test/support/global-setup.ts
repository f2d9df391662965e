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
    // The payment queue's schema too, as every service start makes it: every invoice enqueues a job.
    await migrateDatabase(context.database, async () => {
      await seedEmptyDatabase(context, createLogger('silent'));
      await context.paymentQueue.start(() => {});
    });
    await context.paymentQueue.stop();
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
