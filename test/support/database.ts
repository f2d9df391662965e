// Test databases, on one PostgreSQL server per run: the external one of TEST_DATABASE_URL, or,
// when it is unset, one embedded server the global setup starts through the service's own module
// (EMBEDDED_SERVER_URL_VARIABLE). The global setup migrates and seeds a template database on it;
// each test file gets a fresh copy of it.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { postgresConnection } from '../../src/db/url.js';

/** The external PostgreSQL server of this run; null in the embedded-server run. */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || null;

/** Where the global setup tells the test processes the URL of the embedded server it started. */
export const EMBEDDED_SERVER_URL_VARIABLE = 'PI_TEST_EMBEDDED_SERVER_URL';

/** The server this run's databases live on. */
function serverUrl(): string {
  const url = TEST_DATABASE_URL ?? process.env[EMBEDDED_SERVER_URL_VARIABLE];
  if (!url) throw new Error(`neither TEST_DATABASE_URL nor ${EMBEDDED_SERVER_URL_VARIABLE} is set`);
  return url;
}

export type DatabaseTarget =
  | { databaseUrl: string; dataDir?: undefined }
  | { databaseUrl?: undefined; dataDir: string };

export interface TestDatabase {
  target: DatabaseTarget;
  drop(): Promise<void>;
}

/** The run's server URL with another database name. */
export function databaseUrlFor(name: string): string {
  const url = new URL(serverUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

/** A postgres.js client of one connection to `databaseUrl`, a Unix socket URL of the embedded server's included. */
export function connectTo(databaseUrl: string): postgres.Sql {
  const connection = postgresConnection(databaseUrl);
  return postgres(connection.url, { path: connection.path, max: 1, onnotice: () => {} });
}

async function withMaintenanceConnection<T>(task: (sql: postgres.Sql) => Promise<T>): Promise<T> {
  const sql = connectTo(serverUrl());
  try {
    return await task(sql);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * A copy of a stopped embedded server's DATA_DIR, owners and modes kept (as root, the cluster
 * belongs to the server's user). The copy is the temporary directory itself, not one inside: as
 * root, the server's user must reach it, and the service opens it up for that when it starts.
 */
export function copyDataDir(source: string): string {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'pi_data-'));
  execFileSync('cp', ['-a', `${source}/.`, dataDir]);
  return dataDir;
}

/**
 * A DATA_DIR of its own, for a service that runs an embedded server in it, as a first start
 * leaves it (the run's template, global-setup.ts): for what only the embedded mode does.
 */
export function copyTemplateDataDir(template: string): TestDatabase {
  const dataDir = copyDataDir(template);
  return { target: { dataDir }, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
}

export async function createEmptyDatabase(prefix = 'pi_test'): Promise<TestDatabase> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  await withMaintenanceConnection((sql) => sql.unsafe(`create database ${name}`));
  return { target: { databaseUrl: databaseUrlFor(name) }, drop: () => dropDatabase(name) };
}

export async function dropDatabase(name: string): Promise<void> {
  await withMaintenanceConnection((sql) => sql.unsafe(`drop database if exists ${name} with (force)`));
}

/** A fresh copy of the run's template database (see global-setup.ts). */
export async function copyTemplateDatabase(template: string): Promise<TestDatabase> {
  const name = `pi_test_${randomBytes(6).toString('hex')}`;
  for (let attempt = 0; ; attempt++) {
    try {
      await withMaintenanceConnection((sql) => sql.unsafe(`create database ${name} template ${template}`));
      break;
    } catch (error) {
      // Two files cloning the template at the same instant: PostgreSQL refuses one; try again.
      if (attempt >= 20 || !/being accessed by other users/.test(String(error))) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100 + Math.random() * 200));
    }
  }
  return { target: { databaseUrl: databaseUrlFor(name) }, drop: () => dropDatabase(name) };
}
