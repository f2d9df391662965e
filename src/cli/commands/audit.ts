// partnerctl commands for the audit trail of operators' changes.
import { type Command, listQuery, PAGING_OPTIONS } from '../command.js';
import { pageText, type Row } from '../output.js';

const COLUMNS = ['occurred_at', 'actor', 'summary', 'action', 'target_id', 'address'];

export const auditCommands: Command[] = [
  {
    name: 'audit list',
    summary: "List operators' changes, newest first (all, or filtered by resource, operator, action, time)",
    usage: '[--target ID] [--operator ID] [--action tenant.deactivate] [--since ISO-TIME] [--limit N] [--offset N]',
    options: {
      target: { type: 'string' },
      operator: { type: 'string' },
      action: { type: 'string' },
      since: { type: 'string' },
      ...PAGING_OPTIONS,
    },
    async run(invocation) {
      const { options } = invocation;
      const query = listQuery(options, {
        target_id: options.target,
        operator_id: options.operator,
        action: options.action,
        since: options.since,
      });
      const page = await invocation
        .admin()
        .request<{ results: Row[]; count: number; next: string | null }>('GET', `/audit-events?${query}`);
      invocation.output(pageText(page, COLUMNS), page);
    },
  },
];
