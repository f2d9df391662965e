// Each scenario's own database: a copy of the suite's embedded DATA_DIR template (the service runs
// its own server there), or a clone of its PostgreSQL template on the suite's cluster.
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import postgres from 'postgres';
import { inject } from 'vitest';
import { copyDataDir } from '../../support/database.js';

type DatabaseKind = 'PostgreSQL' | 'embedded server';

export interface ScenarioDatabase {
  kind: DatabaseKind;
  target: { databaseUrl: string; dataDir?: undefined } | { databaseUrl?: undefined; dataDir: string };
  drop(): Promise<void>;
}

/** The kinds this machine can run: PostgreSQL only when the suite's cluster runs. */
export const DATABASE_KINDS: DatabaseKind[] = inject('postgresTemplateUrl')
  ? ['PostgreSQL', 'embedded server']
  : ['embedded server'];

/** A copy of the template, migrated and seeded by this code; `empty`: a new PostgreSQL database (as a first start finds it). */
export async function scenarioDatabase(kind: DatabaseKind, { empty = false } = {}): Promise<ScenarioDatabase> {
  if (kind === 'embedded server') {
    const dataDir = copyDataDir(inject('dataDirTemplate'));
    return { kind, target: { dataDir }, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  const template = new URL(inject('postgresTemplateUrl'));
  const name = `faults_${randomBytes(5).toString('hex')}`;
  const maintenance = postgres({ ...pgOptions(template), database: 'postgres' });
  await maintenance.unsafe(`create database ${name}${empty ? '' : ` template ${template.pathname.slice(1)}`}`);
  await maintenance.end();
  const url = new URL(template);
  url.pathname = `/${name}`;
  return {
    kind,
    target: { databaseUrl: url.toString() },
    async drop() {
      const sql = postgres({ ...pgOptions(template), database: 'postgres' });
      await sql.unsafe(`drop database if exists ${name} with (force)`);
      await sql.end();
    },
  };
}

function pgOptions(url: URL) {
  return { host: url.hostname, port: Number(url.port), username: url.username, max: 1, onnotice: () => {} };
}
