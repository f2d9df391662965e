// Retention: what is kept how long, and the prune that enforces it. One prune for every table
// that joins (a RetentionRule: the table, its time column, how long rows are kept), run by a timer
// in every worker process, one instance at a time under an advisory lock. Rows go in small
// batches, each its own short statement, so no prune holds a lock that callbacks or the console
// would wait on. Payment events are never pruned: they are the record of what partners reported.
// A payment request's row (payment_requests) goes with its invoice.
import type { DatabaseHandle } from '../db/client.js';
import { REFUSALS_KEPT_PER_TENANT } from '../payments/index.js';

export interface RetentionRule {
  /** A table of the public schema. */
  table: string;
  /** The timestamp column that ages a row. */
  column: string;
  /** Rows older than this are deleted; 0 keeps them forever. */
  maxAgeHours: number;
  /** At most this many of a tenant's newest rows are kept, whatever their age (a table with tenant_id and id). */
  keepNewestPerTenant?: number;
}

export interface RetentionSettings {
  /** RETENTION_DELIVERY_ATTEMPTS_DAYS: payment request attempts (their invoice and events stay). */
  deliveryAttemptsDays: number;
  /** RETENTION_AUDIT_EVENTS_DAYS: operators' changes. */
  auditEventsDays: number;
  /** RETENTION_REFUSED_NOTIFICATIONS_DAYS: refused payment callbacks on record (src/payments/refusals.ts). */
  refusedNotificationsDays: number;
}

/** Rows deleted per statement: small enough that each is over in milliseconds. */
const BATCH_ROWS = 1000;
/** Advisory lock key: one prune at a time across instances. */
const PRUNE_LOCK_KEY = 715_100_030;

/** Idempotency keys are honoured for 24 hours (payments/invoices.ts); a day later they are noise. */
const IDEMPOTENCY_KEY_HOURS = 48;

/**
 * Every table the prune visits. A table of another area joins with a line here, its age setting
 * beside the others in RetentionSettings (docs/operations.md, "Retention").
 */
export function retentionRules(settings: RetentionSettings): RetentionRule[] {
  return [
    { table: 'payment_deliveries', column: 'attempted_at', maxAgeHours: settings.deliveryAttemptsDays * 24 },
    { table: 'audit_events', column: 'occurred_at', maxAgeHours: settings.auditEventsDays * 24 },
    { table: 'invoice_idempotency_keys', column: 'created_at', maxAgeHours: IDEMPOTENCY_KEY_HOURS },
    {
      table: 'refused_notifications',
      column: 'received_at',
      maxAgeHours: settings.refusedNotificationsDays * 24,
      keepNewestPerTenant: REFUSALS_KEPT_PER_TENANT,
    },
  ];
}

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** Deletes what the rules let go, batch by batch; rows deleted per table. */
export async function prune(
  handle: DatabaseHandle,
  rules: RetentionRule[],
  now = new Date(),
): Promise<Record<string, number>> {
  return handle.withAdvisoryLock(PRUNE_LOCK_KEY, async () => {
    const deleted: Record<string, number> = {};
    for (const rule of rules) {
      const table = quoted(rule.table);
      const column = quoted(rule.column);
      const deleteBatches = async (where: string, values: unknown[]) => {
        for (;;) {
          const { rows } = await handle.executeSql<{ count: number }>(
            `with gone as (
               delete from ${table} where ctid in (
                 select ctid from ${table} where ${where} limit ${BATCH_ROWS} for update skip locked)
               returning 1)
             select count(*)::int as count from gone`,
            values,
          );
          deleted[rule.table] += rows[0].count;
          if (rows[0].count < BATCH_ROWS) return;
        }
      };
      deleted[rule.table] = 0;
      if (rule.maxAgeHours > 0) {
        const cutoff = new Date(now.getTime() - rule.maxAgeHours * 3600_000);
        await deleteBatches(`${column} < $1::timestamptz`, [cutoff.toISOString()]);
      }
      if (rule.keepNewestPerTenant) {
        // Each tenant past the cap, with the time of its first row beyond it, through the tenant index.
        const { rows: crowded } = await handle.executeSql(
          `select tenants.id as tenant_id, cutoff.at::text as at from tenants cross join lateral (
             select ${column} as at from ${table} where tenant_id = tenants.id
             order by ${column} desc, id desc offset $1 limit 1) cutoff`,
          [rule.keepNewestPerTenant],
        );
        for (const row of crowded)
          await deleteBatches(`tenant_id = $1 and ${column} <= $2::timestamptz`, [row.tenant_id, row.at]);
      }
    }
    return deleted;
  });
}

/**
 * How often each worker process prunes: often enough that a flood of refused callbacks between two
 * prunes stays small beside the per-tenant cap; a prune with nothing to delete costs a few index probes.
 */
const PRUNE_INTERVAL_MS = 10 * 60_000;
/** The first prune after a start waits this long: a start has enough to do. */
const FIRST_PRUNE_DELAY_MS = 5 * 60_000;

/** Prunes now and then until stopped; failures are reported and retried at the next turn. */
export function schedulePrune(
  handle: DatabaseHandle,
  rules: RetentionRule[],
  report: (outcome: { deleted: Record<string, number> } | { error: unknown }) => void,
): { stop(): Promise<void> } {
  let timer: NodeJS.Timeout;
  let running: Promise<void> = Promise.resolve();
  const run = () => {
    running = prune(handle, rules).then(
      (deleted) => report({ deleted }),
      (error) => report({ error }),
    );
    timer = setTimeout(run, PRUNE_INTERVAL_MS);
    timer.unref();
  };
  timer = setTimeout(run, FIRST_PRUNE_DELAY_MS);
  timer.unref();
  // A prune under way finishes its batch before the database closes.
  return {
    stop() {
      clearTimeout(timer);
      return running;
    },
  };
}
