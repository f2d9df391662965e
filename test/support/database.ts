// Test databases: the global setup migrates and seeds one template per run (PGlite directory, or
// a PostgreSQL database when TEST_DATABASE_URL is set); each test file gets a fresh copy of it.
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || null;

export type DatabaseTarget =
  | { databaseUrl: string; dataDir?: undefined }
  | { databaseUrl?: undefined; dataDir: string };

export interface TestDatabase {
  target: DatabaseTarget;
  drop(): Promise<void>;
}

/** `TEST_DATABASE_URL` with another database name. */
export function databaseUrlFor(name: string): string {
  const url = new URL(TEST_DATABASE_URL!);
  url.pathname = `/${name}`;
  return url.toString();
}

async function withMaintenanceConnection<T>(task: (sql: postgres.Sql) => Promise<T>): Promise<T> {
  const sql = postgres(TEST_DATABASE_URL!, { max: 1, onnotice: () => {} });
  try {
    return await task(sql);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

export async function createEmptyDatabase(prefix = 'pi_test'): Promise<TestDatabase> {
  if (!TEST_DATABASE_URL) {
    const dataDir = mkdtempSync(path.join(tmpdir(), `${prefix}-`));
    return { target: { dataDir }, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  await withMaintenanceConnection((sql) => sql.unsafe(`create database ${name}`));
  return { target: { databaseUrl: databaseUrlFor(name) }, drop: () => dropDatabase(name) };
}

export async function dropDatabase(name: string): Promise<void> {
  await withMaintenanceConnection((sql) => sql.unsafe(`drop database if exists ${name} with (force)`));
}

/** A fresh copy of the run's template database (see global-setup.ts). */
export async function copyTemplateDatabase(template: string): Promise<TestDatabase> {
  if (!TEST_DATABASE_URL) {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'pi_test-'));
    cpSync(template, dataDir, { recursive: true });
    rmSync(path.join(dataDir, 'partner-integrations.lock'), { force: true });
    return { target: { dataDir }, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
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
