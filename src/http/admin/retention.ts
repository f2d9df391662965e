// `POST /admin/v1/prunes`: the retention prune (src/maintenance/retention.ts) run now, on the
// running service, with its retention settings; `partnerctl prune` calls it. The service also runs
// it on its own schedule; one prune runs at a time across instances.
import { Type } from '@sinclair/typebox';
import { prune, retentionRules } from '../../maintenance/index.js';
import { route } from '../route.js';

const PruneResult = Type.Object({
  deleted: Type.Record(Type.String(), Type.Integer({ minimum: 0 }), {
    description: 'Rows deleted, per table the retention rules visit',
  }),
  ms: Type.Integer({ description: 'How long the prune took, waiting for one under way included' }),
});

export const adminRetentionRoutes = [
  route({
    method: 'POST',
    url: '/prunes',
    schema: {
      operationId: 'prune',
      tags: ['operations'],
      summary: 'Delete now what is past its retention',
      description:
        "What the service's scheduled prune does, now: rows past the retention settings of this instance, in small " +
        'batches (docs/operations.md, "Retention"). A prune under way elsewhere is waited for.',
      response: { 200: PruneResult },
    },
    handler: (context) => {
      const rules = retentionRules(context.config.retention);
      return async () => {
        const started = performance.now();
        const deleted = await prune(context.database, rules);
        return { deleted, ms: Math.round(performance.now() - started) };
      };
    },
  }),
];
