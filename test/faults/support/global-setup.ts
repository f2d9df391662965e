// Once per fault suite run: a migrated and seeded embedded server's DATA_DIR to copy, and, where the
// machine allows, a PostgreSQL cluster of the suite's own with a template database to clone.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
import { loadConfig } from '../../../src/config.js';
import { migrateDatabase } from '../../../src/db/migrate.js';
import { createLogger } from '../../../src/logger.js';
import { seedEmptyDatabase } from '../../../src/seed.js';
import { openContext } from '../../../src/server.js';
import { testEnv } from '../../support/env.js';
import { ownClusterUnavailable, PostgresCluster } from './postgres-cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A migrated, seeded DATA_DIR of the embedded server, stopped. */
    dataDirTemplate: string;
    /** URL of the suite's cluster's template database, or '' when the cluster cannot run here. */
    postgresTemplateUrl: string;
    /** The suite's cluster, for the scenario that stops and starts it. */
    postgresCluster: { dataDir: string; port: number } | null;
  }
}

const TEMPLATE_DATABASE = 'faults_template';

async function migrateAndSeed(target: { databaseUrl?: string; dataDir?: string }): Promise<void> {
  const context = await openContext(loadConfig(testEnv(target as never)));
  try {
    await migrateDatabase(context.database, () => seedEmptyDatabase(context, createLogger('silent')));
  } finally {
    await context.database.close();
  }
}

async function postgresTemplate(): Promise<{ url: string; cluster: PostgresCluster | null }> {
  if (ownClusterUnavailable) {
    console.log(`[faults] PostgreSQL scenarios skipped: ${ownClusterUnavailable}`);
    return { url: '', cluster: null };
  }
  const cluster = await PostgresCluster.create();
  const sql = postgres(cluster.url(), { max: 1, onnotice: () => {} });
  await sql.unsafe(`create database ${TEMPLATE_DATABASE}`);
  await sql.end();
  await migrateAndSeed({ databaseUrl: cluster.url(TEMPLATE_DATABASE) });
  return { url: cluster.url(TEMPLATE_DATABASE), cluster };
}

export default async function setup(project: TestProject) {
  const dataDirTemplate = mkdtempSync(path.join(tmpdir(), 'pi-faults-template-'));
  const [, postgresSide] = await Promise.all([migrateAndSeed({ dataDir: dataDirTemplate }), postgresTemplate()]);
  project.provide('dataDirTemplate', dataDirTemplate);
  project.provide('postgresTemplateUrl', postgresSide.url);
  const { cluster } = postgresSide;
  project.provide('postgresCluster', cluster && { dataDir: cluster.dataDir, port: cluster.port });
  return () => {
    postgresSide.cluster?.destroy();
    rmSync(dataDirTemplate, { recursive: true, force: true });
  };
}
