// partnerctl commands for the audit trail of operators' changes.
import { CliError } from '../admin-client.js';
import type { Command, Invocation } from '../command.js';
import { type Row, table } from '../output.js';

const COLUMNS = ['occurred_at', 'actor', 'action', 'target_id', 'fields', 'status', 'address'];

function wholeNumber(options: Invocation['options'], name: string): string | null {
  const value = options[name];
  if (value === undefined) return null;
  if (typeof value !== 'string' || !/^\d+$/.test(value)) throw new CliError(`--${name} must be a whole number`);
  return value;
}

export const auditCommands: Command[] = [
  {
    name: 'audit list',
    summary: "List operators' changes, newest first (all, or filtered by resource, operator, action, time)",
    usage: '[--target ID] [--operator ID] [--action "METHOD /route"] [--since ISO-TIME] [--limit N] [--offset N]',
    options: {
      target: { type: 'string' },
      operator: { type: 'string' },
      action: { type: 'string' },
      since: { type: 'string' },
      limit: { type: 'string' },
      offset: { type: 'string' },
    },
    async run(invocation) {
      const { options } = invocation;
      const query = new URLSearchParams();
      const filters = {
        target_id: options.target,
        operator_id: options.operator,
        action: options.action,
        since: options.since,
      };
      for (const [name, value] of Object.entries(filters)) if (typeof value === 'string') query.set(name, value);
      for (const name of ['limit', 'offset']) {
        const value = wholeNumber(options, name);
        if (value !== null) query.set(name, value);
      }
      const page = await invocation
        .admin()
        .request<{ results: Row[]; count: number; next: string | null }>('GET', `/audit-events?${query}`);
      const shown = page.results.length;
      const footer = `${shown} of ${page.count}${page.next ? ' (more with --offset)' : ''}`;
      invocation.output(`${table(page.results, COLUMNS)}\n${footer}`, page);
    },
  },
];
