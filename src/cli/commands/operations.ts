// partnerctl commands for running the service for years: named operators, online backups and
// their restore.
import {
  closeSync,
  createReadStream,
  existsSync,
  openSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { PRUNE_INTERVAL_MINUTES } from '../../config.js';
import { CliError } from '../admin-client.js';
import { type Command, positional, required } from '../command.js';
import { type Row, record, table } from '../output.js';

const OPERATOR_COLUMNS = ['id', 'name', 'role', 'token_hint', 'created_at'];

/** The first line of a file (within its first 64 KiB): a backup's header. */
function firstLine(file: string): string {
  const head = Buffer.alloc(Math.min(statSync(file).size, 64 * 1024));
  const descriptor = openSync(file, 'r');
  try {
    readSync(descriptor, head, 0, head.length, 0);
  } finally {
    closeSync(descriptor);
  }
  return head.toString('utf8').split('\n')[0];
}

/** What a backup's `sealed_with` asks of the service it is restored for, in words. */
function keysNeeded(sealedWith: string[] | undefined | null): string {
  if (!sealedWith) return 'the backup does not say which encryption key its signing secrets need (taken by 1.0.0)';
  if (sealedWith.length === 0) return 'no signing secrets: the restore needs no encryption key';
  return (
    `the restored signing secrets open with the encryption key ${sealedWith.join(' and ')} (fingerprint): ` +
    'SECRET_ENCRYPTION_KEY, or DATA_DIR/secret-encryption.key, of the service backed up'
  );
}

/** The last line of a file (within its last 64 KiB): a backup's end record, when it is complete. */
function lastLine(file: string): string {
  const tail = Buffer.alloc(Math.min(statSync(file).size, 64 * 1024));
  const descriptor = openSync(file, 'r');
  try {
    readSync(descriptor, tail, 0, tail.length, statSync(file).size - tail.length);
  } finally {
    closeSync(descriptor);
  }
  return tail.toString('utf8').trimEnd().split('\n').at(-1) ?? '';
}

export const operationCommands: Command[] = [
  {
    name: 'operators list',
    summary: 'List the named operators and their roles',
    async run(invocation) {
      const { operators } = await invocation.admin().request<{ operators: Row[] }>('GET', '/operators');
      invocation.output(table(operators, OPERATOR_COLUMNS), { operators });
    },
  },
  {
    name: 'operators create',
    summary: 'Name an operator with a role (read-only, operator or admin); prints their token once',
    usage: '--name NAME --role ROLE',
    options: { name: { type: 'string' }, role: { type: 'string' } },
    async run(invocation) {
      const body = { name: required(invocation.options, 'name'), role: required(invocation.options, 'role') };
      const created = await invocation.admin().request<{ operator: Row; token: string }>('POST', '/operators', body);
      invocation.output(
        `${record(created.operator)}\ntoken       ${created.token}\n\nThe token is shown once: hand it to ${created.operator.name} now.`,
        created,
      );
    },
  },
  {
    name: 'operators update',
    summary: 'Rename an operator or change their role',
    usage: 'ID [--name NAME] [--role ROLE]',
    options: { name: { type: 'string' }, role: { type: 'string' } },
    async run(invocation) {
      const id = positional(invocation, 0, 'operator id');
      const { name, role } = invocation.options;
      const body = { ...(typeof name === 'string' && { name }), ...(typeof role === 'string' && { role }) };
      if (Object.keys(body).length === 0) throw new CliError('--name or --role is required');
      const { operator } = await invocation.admin().request<{ operator: Row }>('PATCH', `/operators/${id}`, body);
      invocation.output(record(operator), { operator });
    },
  },
  {
    name: 'operators delete',
    summary: 'Delete an operator: their token stops at once',
    usage: 'ID',
    async run(invocation) {
      const id = positional(invocation, 0, 'operator id');
      const { operator } = await invocation.admin().request<{ operator: Row }>('DELETE', `/operators/${id}`);
      invocation.output(`operator ${operator.name} deleted`, { operator });
    },
  },
  {
    name: 'backup',
    summary: 'Save a consistent backup of the running service’s database into FILE (admin role)',
    usage: 'FILE',
    async run(invocation) {
      const file = positional(invocation, 0, 'backup file');
      if (existsSync(file)) throw new CliError(`${file} exists already: choose a new file name`);
      const partial = `${file}.partial`;
      // Where it goes is tried before the service is asked for anything.
      try {
        writeFileSync(partial, '', { flag: 'wx', mode: 0o600 });
      } catch (error) {
        throw new CliError(`cannot write ${partial}: ${(error as Error).message}`);
      }
      const started = Date.now();
      try {
        const bytes = await invocation.admin().download('POST', '/backups', partial);
        let end: { end?: boolean; rows?: Record<string, number> } = {};
        try {
          end = JSON.parse(lastLine(partial));
        } catch {}
        if (!end.end || !end.rows) throw new CliError('the backup was cut short (no end record): try again');
        renameSync(partial, file);
        const rows = Object.values(end.rows).reduce((sum, count) => sum + count, 0);
        const { sealed_with } = JSON.parse(firstLine(file)) as { sealed_with?: string[] };
        const summary = {
          file,
          bytes,
          tables: Object.keys(end.rows).length,
          rows,
          ms: Date.now() - started,
          sealed_with,
        };
        invocation.output(
          `backup saved to ${file}: ${summary.tables} tables, ${rows} rows, ${bytes} bytes in ${summary.ms} ms\n` +
            `${keysNeeded(sealed_with)}; keep it apart from the backup`,
          summary,
        );
      } finally {
        rmSync(partial, { force: true });
      }
    },
  },
  {
    name: 'prune',
    summary: `Delete now what is past its retention, on the running service (it also does it every ${PRUNE_INTERVAL_MINUTES} minutes)`,
    async run(invocation) {
      const { deleted, ms } = await invocation
        .admin()
        .request<{ deleted: Record<string, number>; ms: number }>('POST', '/prunes');
      const lines = Object.entries(deleted).map(([table, rows]) => `${table}: ${rows} rows deleted`);
      invocation.output([...lines, `in ${ms} ms`].join('\n'), { deleted, ms });
    },
  },
  {
    name: 'restore',
    summary: 'Restore a backup FILE into an empty database (DATABASE_URL, else the embedded one in an empty DATA_DIR)',
    usage: 'FILE',
    async run(invocation) {
      const file = positional(invocation, 0, 'backup file');
      if (!existsSync(file)) throw new CliError(`${file} does not exist`);
      // Loaded here: client commands start without the service's dependencies.
      const { loadConfig } = await import('../../config.js');
      const { openDatabase } = await import('../../db/client.js');
      const { migrateDatabase } = await import('../../db/migrate.js');
      const { restoreBackup, BackupError } = await import('../../maintenance/index.js');
      const { keyFilePath, secretBoxFor } = await import('../../tenants/index.js');
      const config = loadConfig();
      const database = await openDatabase(config);
      const started = Date.now();
      try {
        const summary = await restoreBackup(database, createReadStream(file), () => migrateDatabase(database));
        const rows = Object.values(summary.rows).reduce((sum, count) => sum + count, 0);
        const here = secretBoxFor(
          config.secretEncryptionKey,
          config.previousSecretEncryptionKeys,
          config.dataDir,
        ).fingerprints();
        const missing = (summary.sealedWith ?? []).filter((fingerprint) => !here.includes(fingerprint));
        const keys = missing.length
          ? `not configured here: start the service with SECRET_ENCRYPTION_KEY set to it, or with its key file at ${keyFilePath(config.dataDir)}`
          : 'configured here';
        invocation.output(
          `restored ${file}: ${summary.tables} tables, ${rows} rows, every count checked, in ${Date.now() - started} ms\n` +
            `${keysNeeded(summary.sealedWith)}${summary.sealedWith?.length ? `: ${keys}` : ''}`,
          { file, ...summary, keys_missing: missing },
        );
      } catch (error) {
        if (error instanceof BackupError) throw new CliError(error.message);
        throw error;
      } finally {
        await database.close();
      }
    },
  },
];
