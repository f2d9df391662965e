// The shape of a partnerctl command, and what a command is given to run.
import type { ParseArgsConfig } from 'node:util';
import { type AdminClient, CliError } from './admin-client.js';

export type OptionSpec = NonNullable<ParseArgsConfig['options']>;
export type OptionValues = Record<string, string | boolean | (string | boolean)[] | undefined>;

export interface Command {
  /** The words that name it, e.g. `tenants create`. */
  name: string;
  summary: string;
  /** What follows the name, e.g. `--name NAME --slug SLUG --gateway GATEWAY [--endpoint URL]`. */
  usage?: string;
  options?: OptionSpec;
  run(invocation: Invocation): Promise<void>;
}

export interface Invocation {
  positionals: string[];
  options: OptionValues;
  json: boolean;
  admin(): AdminClient;
  /** Prints `human` for people, or `data` as JSON with --json. */
  output(human: string, data: unknown): void;
}

export function required(options: OptionValues, name: string): string {
  const value = options[name];
  if (typeof value !== 'string' || value === '') throw new CliError(`--${name} is required`);
  return value;
}

export function positional(invocation: Invocation, index: number, what: string): string {
  const value = invocation.positionals[index];
  if (!value) throw new CliError(`${what} is required`);
  return value;
}
