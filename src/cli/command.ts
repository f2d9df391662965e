// The shape of a partnerctl command, and what a command is given to run.
import { readFileSync } from 'node:fs';
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
  /**
   * Prints `human` for people, or `data` as JSON with --json. `data` is one object whose keys name
   * what they hold: a resource under its singular name (`{tenant}`, `{credential}`), a list under
   * its plural (`{tenants}`), a paged list as the API pages it (`{count, next, previous, results}`),
   * a report as its fields. The admin API's answer as is wherever it has that shape already.
   */
  output(human: string, data: unknown): void;
}

export function required(options: OptionValues, name: string): string {
  const value = options[name];
  if (typeof value !== 'string' || value === '') throw new CliError(`--${name} is required`);
  return value;
}

/** A file the user named (`--file`), as text; one readable line when it cannot be read. */
export function readNamedFile(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new CliError(`cannot read ${file}: ${(error as Error).message}`);
  }
}

/** A JSON file the user named; one readable line when it cannot be read or is not JSON. */
export function readNamedJsonFile(file: string): unknown {
  const text = readNamedFile(file);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new CliError(`${file} is not JSON: ${(error as Error).message}`);
  }
}

export function positional(invocation: Invocation, index: number, what: string): string {
  const value = invocation.positionals[index];
  if (!value) throw new CliError(`${what} is required`);
  return value;
}

function wholeNumber(options: OptionValues, name: string): string | null {
  const value = options[name];
  if (value === undefined) return null;
  if (typeof value !== 'string' || !/^\d+$/.test(value)) throw new CliError(`--${name} must be a whole number`);
  return value;
}

/** The `--limit` and `--offset` options of a command printing a paged list. */
export const PAGING_OPTIONS: OptionSpec = { limit: { type: 'string' }, offset: { type: 'string' } };

/**
 * The query of a paged admin list: each filter given (API name → option value), then `--limit`
 * and `--offset`. The API checks the filters' values: a bad one is its 400.
 */
export function listQuery(options: OptionValues, filters: Record<string, OptionValues[string]>): URLSearchParams {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(filters)) if (typeof value === 'string') query.set(name, value);
  for (const name of ['limit', 'offset']) {
    const value = wholeNumber(options, name);
    if (value !== null) query.set(name, value);
  }
  return query;
}
