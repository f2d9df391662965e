// The partner tools (`receive`, `simulate notify`) as a program of their own, for partners: bundled
// with their one package into a single file (`npm run generate:partner-tools`) that the
// integrations host serves at `/docs/partner-tools.mjs`, run with Node alone:
// `node partner-tools.mjs receive --port 9000 --secret whsec_...`. No admin API here: a partner
// has only its own credentials.
import { CliError } from './admin-client.js';
import { commandList, runCommandLine, USER_ERROR_CODES } from './command-line.js';
import { partnerToolCommands } from './commands/partner-tools.js';

const PROGRAM = 'node partner-tools.mjs';

function usage(): string {
  return [
    `usage: ${PROGRAM} <command> [arguments] [--json]`,
    '',
    'commands:',
    ...commandList(partnerToolCommands),
    '',
    `Run \`${PROGRAM} <command> --help\` for a command's arguments. The guide: /docs/ on the integrations host.`,
  ].join('\n');
}

runCommandLine(
  {
    program: PROGRAM,
    commands: partnerToolCommands,
    globalOptions: { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    usage,
    admin: () => {
      throw new CliError('partner-tools.mjs has no access to the admin API');
    },
  },
  process.argv.slice(2),
).catch((error: Error & { code?: string }) => {
  const expected = error instanceof CliError || USER_ERROR_CODES.includes(error.code ?? '');
  console.error(`partner-tools: ${expected ? error.message : (error.stack ?? error.message)}`);
  process.exit(expected ? 1 : 70);
});
