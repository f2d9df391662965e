// partnerctl commands for the default suggested prompt sets (admin API clients).
import { CliError } from '../admin-client.js';
import { type Command, positional, readNamedFile } from '../command.js';
import { type Row, table } from '../output.js';

const PROMPT_COLUMNS = ['sort_order', 'text', 'id'];

/** `--text` values (repeatable), then the non-blank lines of `--file`, in that order. */
function promptTexts(options: Record<string, unknown>): string[] {
  const texts = [options.text].flat().filter((text): text is string => typeof text === 'string');
  if (typeof options.file === 'string') {
    texts.push(
      ...readNamedFile(options.file)
        .split(/\r?\n/)
        .filter((line) => line.trim() !== ''),
    );
  }
  if (texts.length === 0)
    throw new CliError('give the prompts with --text TEXT (repeatable) or --file FILE (one per line)');
  return texts;
}

export const promptCommands: Command[] = [
  {
    name: 'default-prompts show',
    summary: 'Show the default suggested prompts of a language (en or ar)',
    usage: 'LANGUAGE',
    async run(invocation) {
      const language = positional(invocation, 0, 'language');
      const { prompts } = await invocation.admin().request<{ prompts: Row[] }>('GET', `/default-prompts/${language}`);
      invocation.output(table(prompts, PROMPT_COLUMNS), { prompts });
    },
  },
  {
    name: 'default-prompts set',
    summary: 'Replace the default suggested prompts of a language, in the order given',
    usage: 'LANGUAGE (--text TEXT ... | --file FILE)',
    options: { text: { type: 'string', multiple: true }, file: { type: 'string' } },
    async run(invocation) {
      const language = positional(invocation, 0, 'language');
      const prompts = promptTexts(invocation.options).map((text) => ({ text }));
      const replaced = await invocation
        .admin()
        .request<{ prompts: Row[] }>('PUT', `/default-prompts/${language}`, { prompts });
      invocation.output(table(replaced.prompts, PROMPT_COLUMNS), replaced);
    },
  },
];
