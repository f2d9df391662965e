// partnerctl: runs the service (`serve`), applies migrations (`migrate`), and drives the admin API
// for operators. Client commands read ADMIN_URL and ADMIN_TOKEN (or --admin-url, --admin-token).
import path from 'node:path';
import { inspect } from 'node:util';
import { adminTokenFile, ConfigError, DEFAULT_ADMIN_URL, loadConfig, storedAdminToken } from '../config.js';
import { DataDirLockedError } from '../db/data-dir-lock.js';
import { DatabaseUnavailableError, unavailability } from '../db/errors.js';
import { createLogger, prettyDestination } from '../logger.js';
import { AdminClient, CliError } from './admin-client.js';
import type { Command, OptionSpec, OptionValues } from './command.js';
import { commandList, runCommandLine, USER_ERROR_CODES } from './command-line.js';
import { auditCommands } from './commands/audit.js';
import { geoCommands } from './commands/geo.js';
import { operationCommands } from './commands/operations.js';
import { partnerToolCommands } from './commands/partner-tools.js';
import { paymentCommands } from './commands/payments.js';
import { promptCommands } from './commands/prompts.js';
import { tenantCommands } from './commands/tenants.js';
import { tripCommands } from './commands/trips.js';

const serviceCommands: Command[] = [
  {
    name: 'serve',
    summary: 'Run the service: all listeners configured by the environment',
    async run() {
      const config = loadConfig();
      const logger = createLogger(
        config.logLevel,
        config.logFormat === 'pretty' ? prettyDestination(process.stdout.isTTY === true) : undefined,
      );
      // Loaded here, not at the top: client commands start without the service's dependencies.
      const { startService } = await import('../server.js');
      const starting = startService(config, logger);
      let stopping = false;
      // Handled from the first moment: the listeners answer before the start has finished (the
      // payment worker, the prune), and a signal in between must still stop the service cleanly.
      const stop = async (signal: string) => {
        if (stopping) return;
        stopping = true;
        logger.info({ signal }, 'shutting down: finishing in-flight requests');
        const service = await starting.catch(() => null);
        // A start that failed ends the process with its own error.
        if (!service) return;
        await service.close();
        logger.info('stopped');
        process.exit(0);
      };
      process.on('SIGTERM', () => void stop('SIGTERM'));
      process.on('SIGINT', () => void stop('SIGINT'));
      await starting;
    },
  },
  {
    name: 'migrate',
    summary: 'Apply pending database migrations and exit',
    async run(invocation) {
      // The database and nothing else: no secret box, no queue, no key file written.
      const { openDatabase } = await import('../db/client.js');
      const { migrateDatabase } = await import('../db/migrate.js');
      const config = loadConfig();
      const database = await openDatabase(config);
      try {
        // Its log (migrations waiting for their locks) on stderr: stdout is the command's output.
        await migrateDatabase(database, undefined, createLogger(config.logLevel, process.stderr));
      } finally {
        await database.close();
      }
      invocation.output('migrations applied', { migrated: true });
    },
  },
];

const COMMANDS: Command[] = [
  ...serviceCommands,
  ...tenantCommands,
  ...paymentCommands,
  ...geoCommands,
  ...promptCommands,
  ...tripCommands,
  ...partnerToolCommands,
  ...auditCommands,
  ...operationCommands,
];

const GLOBAL_OPTIONS: OptionSpec = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  'admin-url': { type: 'string' },
  'admin-token': { type: 'string' },
};

function usage(): string {
  return [
    'usage: partnerctl <command> [arguments] [--json] [--admin-url URL] [--admin-token TOKEN]',
    '',
    'commands:',
    ...commandList(COMMANDS),
    '',
    `Client commands talk to the admin API at ADMIN_URL (default ${DEFAULT_ADMIN_URL}) with ADMIN_TOKEN.`,
    "Run `partnerctl <command> --help` for a command's arguments.",
  ].join('\n');
}

function admin(values: OptionValues): AdminClient {
  const dataDir = path.resolve(process.env.DATA_DIR || './data');
  const token = (values['admin-token'] as string | undefined) || process.env.ADMIN_TOKEN || storedAdminToken(dataDir);
  if (!token) {
    throw new CliError(
      `ADMIN_TOKEN (or --admin-token) is required: not set, and no generated token at ${adminTokenFile(dataDir)} (DATA_DIR)`,
    );
  }
  const url = (values['admin-url'] as string | undefined) ?? process.env.ADMIN_URL ?? DEFAULT_ADMIN_URL;
  return new AdminClient({ url, token });
}

const EXPECTED_ERRORS = [CliError, ConfigError, DatabaseUnavailableError, DataDirLockedError];
runCommandLine(
  { program: 'partnerctl', commands: COMMANDS, globalOptions: GLOBAL_OPTIONS, usage, admin },
  process.argv.slice(2),
).catch((thrown: Error & { code?: string }) => {
  // A database out of reach or out of space, however deep in the failure, is said in its own words.
  const error: Error & { code?: string } = unavailability(thrown) ?? thrown;
  const expected = EXPECTED_ERRORS.some((type) => error instanceof type) || USER_ERROR_CODES.includes(error.code ?? '');
  // Operators get one readable line; what is a bug, its stack and its causes (a database error's
  // code and detail).
  console.error(expected ? `partnerctl: ${error.message}` : `partnerctl: ${inspect(error)}`);
  process.exit(expected ? 1 : 70);
});
