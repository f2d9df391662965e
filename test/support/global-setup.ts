// Once per run: the process bundles, and a migrated, seeded template database on the run's server.
// On an external PostgreSQL (TEST_DATABASE_URL) the template is a database there. Without it, a
// DATA_DIR is first made the way a service's first start makes it (embedded server, migrations,
// seeding): kept as the template of tests that run a service on a DATA_DIR of its own, and copied
// for the run's one embedded server, whose seeded `postgres` database is cloned as the template.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
import { loadConfig } from '../../src/config.js';
import { startEmbeddedServer } from '../../src/db/embedded-server.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { postgresConnection } from '../../src/db/url.js';
import { createLogger } from '../../src/logger.js';
import { seedEmptyDatabase } from '../../src/seed.js';
import { openContext } from '../../src/server.js';
import {
  copyDataDir,
  createEmptyDatabase,
  type DatabaseTarget,
  databaseUrlFor,
  EMBEDDED_SERVER_URL_VARIABLE,
  TEST_DATABASE_URL,
} from './database.js';
import { testEnv } from './env.js';
import { buildProcessBundles, type ProcessBundles } from './process-bundles.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The template database's name on the run's server. */
    databaseTemplate: string;
    /** A DATA_DIR as a service's first start leaves it; empty on an external PostgreSQL. */
    dataDirTemplate: string;
    /** What tests run as processes, bundled for this run (process-bundles.ts). */
    processBundles: ProcessBundles;
  }
}

const TEMPLATE_DATABASE = 'pi_template';

async function migrateAndSeed(target: DatabaseTarget): Promise<void> {
  const context = await openContext(loadConfig(testEnv(target)));
  try {
    await migrateDatabase(context.database, () => seedEmptyDatabase(context, createLogger('silent')));
  } finally {
    await context.database.close();
  }
}

async function externalTemplate(project: TestProject): Promise<() => Promise<void>> {
  const template = await createEmptyDatabase(TEMPLATE_DATABASE);
  await migrateAndSeed(template.target);
  project.provide('databaseTemplate', new URL(template.target.databaseUrl!).pathname.slice(1));
  project.provide('dataDirTemplate', '');
  return () => template.drop();
}

async function embeddedTemplate(project: TestProject): Promise<() => Promise<void>> {
  const dataDirTemplate = mkdtempSync(path.join(tmpdir(), 'pi-test-data-template-'));
  await migrateAndSeed({ dataDir: dataDirTemplate });
  const serverDir = copyDataDir(dataDirTemplate);
  const server = await startEmbeddedServer(serverDir, createLogger('warn'));
  // Test processes, started after this, find the server in their environment.
  process.env[EMBEDDED_SERVER_URL_VARIABLE] = server.url;
  const connection = postgresConnection(databaseUrlFor('template1'));
  const sql = postgres(connection.url, { path: connection.path, max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(`create database ${TEMPLATE_DATABASE} template postgres`);
  } finally {
    await sql.end();
  }
  project.provide('databaseTemplate', TEMPLATE_DATABASE);
  project.provide('dataDirTemplate', dataDirTemplate);
  return async () => {
    await server.stop();
    for (const dir of [serverDir, dataDirTemplate]) rmSync(dir, { recursive: true, force: true });
  };
}

export default async function setup(project: TestProject) {
  const bundles = await buildProcessBundles();
  project.provide('processBundles', bundles.files);
  const dropTemplate = await (TEST_DATABASE_URL ? externalTemplate(project) : embeddedTemplate(project));
  return async () => {
    bundles.remove();
    await dropTemplate();
  };
}
