// A command line made of commands: finds the command the arguments name, parses its options, and
// runs it. partnerctl and the partners' single-file tools (partner-tools-script.ts) are two of them.
import { parseArgs } from 'node:util';
import type { AdminClient } from './admin-client.js';
import type { Command, Invocation, OptionSpec, OptionValues } from './command.js';

export interface CommandLine {
  /** The name in usage lines, e.g. `partnerctl`. */
  program: string;
  commands: Command[];
  globalOptions: OptionSpec;
  usage(): string;
  /** The admin API's client for these options; throws a CliError when there is none. */
  admin(values: OptionValues): AdminClient;
}

/** Node's codes for a mistake of the user's (a bad option, a port taken): one line, no stack trace. */
export const USER_ERROR_CODES = [
  'ERR_PARSE_ARGS_UNKNOWN_OPTION',
  'ERR_PARSE_ARGS_INVALID_OPTION_VALUE',
  'EADDRINUSE',
  'EACCES',
  'ERR_INVALID_URL',
];

/** The command whose name is the longest prefix of the arguments' leading words. */
function findCommand(commands: Command[], argv: string[]): { command: Command; rest: string[] } | null {
  const words = argv.filter((arg) => !arg.startsWith('-'));
  let best: Command | null = null;
  for (const command of commands) {
    const name = command.name.split(' ');
    if (name.every((word, i) => words[i] === word) && (!best || name.length > best.name.split(' ').length)) {
      best = command;
    }
  }
  if (!best) return null;
  let toDrop = best.name.split(' ').length;
  const rest = argv.filter((arg) => arg.startsWith('-') || toDrop-- <= 0);
  return { command: best, rest };
}

export async function runCommandLine(line: CommandLine, argv: string[]): Promise<void> {
  const found = findCommand(line.commands, argv);
  if (!found) {
    const helpAsked = argv.length === 0 || argv.includes('--help') || argv.includes('-h');
    console[helpAsked ? 'log' : 'error'](line.usage());
    process.exitCode = helpAsked ? 0 : 2;
    return;
  }
  const { command, rest } = found;
  const { values, positionals } = parseArgs({
    args: rest,
    options: { ...line.globalOptions, ...command.options },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) {
    console.log(`usage: ${line.program} ${command.name} ${command.usage ?? ''}\n\n${command.summary}`);
    return;
  }
  const json = values.json === true;
  const invocation: Invocation = {
    positionals,
    options: values,
    json,
    admin: () => line.admin(values),
    output(human, data) {
      console.log(json ? JSON.stringify(data, null, 2) : human);
    },
  };
  await command.run(invocation);
}

/** Lines of `  name  summary`, one per command, aligned. */
export function commandList(commands: Command[]): string[] {
  const width = Math.max(...commands.map((command) => command.name.length));
  return commands.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`);
}
