// Retention: what is kept how long, and the prune that enforces it. One prune for every table
// that joins (a RetentionRule: the table, its time column, how long rows are kept), run by a timer
// in every worker process, one instance at a time under an advisory lock. Rows go in small
// batches, each its own short statement or transaction, so no prune holds a lock that callbacks
// or the console would wait on. Live payment events are never pruned: they are the record of what
// partners reported; test invoices go with everything that hangs on them (their attempts, events,
// refused callbacks and idempotency keys by the foreign keys' cascade, their payment requests by
// releasePaymentRequests).
import { type Config, PRUNE_INTERVAL_MINUTES } from '../config.js';
import type { DatabaseHandle } from '../db/client.js';
import { tenants } from '../db/schema.js';
import { type RunStatement, statement } from '../db/statements.js';
import { REFUSALS_KEPT_PER_TENANT_MODE, releasePaymentRequests } from '../payments/index.js';

export interface RetentionRule {
  /** A table of the public schema. */
  table: string;
  /** What the prune reports its deleted rows as; the table's name unless said. */
  name?: string;
  /** The timestamp column that ages a row. */
  column: string;
  /** Rows older than this are deleted; 0 keeps them forever. */
  maxAgeHours: number;
  /**
   * At most this many of a tenant's newest rows in each mode are kept, whatever their age (a table
   * with tenant_id, mode and id): test traffic never pushes out live rows (DECISIONS §11).
   */
  keepNewestPerTenantMode?: number;
  /** Only the rows this condition holds for may go (SQL of ours on the table's columns, never input). */
  only?: string;
  /**
   * Aged tenant by tenant (`tenant_id = ... and column < cutoff`), through the table's index on
   * (tenant_id, [only's columns,] column), where there is none on the column alone or where `only`
   * leaves out most of the rows of one.
   */
  byTenant?: boolean;
  /**
   * Rows that something outside the table still needs: called in the transaction that has locked
   * a batch (by `id`), it lets go of what hangs on them and answers the ids that stay for now.
   */
  held?: (run: RunStatement, ids: string[]) => Promise<Set<string>>;
}

/** How long rows that may go are kept (src/config.ts, the RETENTION_*_DAYS settings). */
export type RetentionSettings = Config['retention'];

/** Rows deleted per statement: small enough that each is over in milliseconds. */
const BATCH_ROWS = 1000;
/** Advisory lock key: one prune at a time across instances. */
export const PRUNE_LOCK_KEY = 715_100_030;

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
      keepNewestPerTenantMode: REFUSALS_KEPT_PER_TENANT_MODE,
    },
    { table: 'endpoint_pings', column: 'pinged_at', maxAgeHours: settings.pingsDays * 24, byTenant: true },
    {
      table: 'payment_endpoint_breaker_events',
      column: 'at',
      maxAgeHours: settings.breakerEventsDays * 24,
      byTenant: true,
    },
    {
      // Never a live invoice: `only` is in every statement that picks the rows.
      table: 'invoices',
      name: 'test_invoices',
      column: 'created_at',
      only: "mode = 'test'",
      maxAgeHours: settings.testInvoicesDays * 24,
      byTenant: true,
      held: releasePaymentRequests,
    },
  ];
}

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** One batch of the rows of `rule` that `where` picks: how many were picked, and how many of those went. */
async function deleteBatch(
  handle: DatabaseHandle,
  rule: RetentionRule,
  where: string,
  values: unknown[],
): Promise<{ picked: number; gone: number }> {
  const table = quoted(rule.table);
  const { held } = rule;
  const picked = `select ${held ? 'id' : 'ctid'} from ${table} where ${where} limit ${BATCH_ROWS} for update skip locked`;
  if (!held) {
    const [{ count }] = await handle.run(
      statement<unknown[], { count: number }>(
        `with gone as (delete from ${table} where ctid in (${picked}) returning 1)
         select count(*)::int as count from gone`,
      ),
      values,
    );
    return { picked: count, gone: count };
  }
  return handle.transact(async (run) => {
    const rows = await run(statement<unknown[], { id: string }>(picked), values);
    const ids = rows.map((row) => row.id);
    const staying = ids.length > 0 ? await held(run, ids) : new Set<string>();
    const going = ids.filter((id) => !staying.has(id));
    if (going.length > 0)
      await run(statement<[string[]], never>(`delete from ${table} where id = any($1::uuid[])`), [going]);
    return { picked: ids.length, gone: going.length };
  });
}

/** Deletes the rows of `rule` that `condition` (and the rule's `only`) picks, batch by batch; how many went. */
async function deleteBatches(
  handle: DatabaseHandle,
  rule: RetentionRule,
  condition: string,
  values: unknown[],
): Promise<number> {
  const where = rule.only ? `(${rule.only}) and ${condition}` : condition;
  let deleted = 0;
  for (;;) {
    const { picked, gone } = await deleteBatch(handle, rule, where, values);
    deleted += gone;
    // Rows held stay picked in every batch: go on while others go with them.
    if (picked < BATCH_ROWS || gone === 0) return deleted;
  }
}

/** Deletes what `rule` lets go; how many rows went. */
async function pruneRule(handle: DatabaseHandle, rule: RetentionRule, now: Date): Promise<number> {
  const column = quoted(rule.column);
  let deleted = 0;
  if (rule.maxAgeHours > 0) {
    const cutoff = new Date(now.getTime() - rule.maxAgeHours * 3600_000).toISOString();
    if (rule.byTenant) {
      for (const tenant of await handle.db.select({ id: tenants.id }).from(tenants))
        deleted += await deleteBatches(handle, rule, `tenant_id = $1 and ${column} < $2::timestamptz`, [
          tenant.id,
          cutoff,
        ]);
    } else {
      deleted += await deleteBatches(handle, rule, `${column} < $1::timestamptz`, [cutoff]);
    }
  }
  if (rule.keepNewestPerTenantMode) {
    // Each tenant and mode past the cap, with the time of its first row beyond it, through the tenant index.
    const crowded = await handle.run(
      statement<[keep: number], { tenant_id: string; mode: string; at: string }>(
        `select tenants.id as tenant_id, modes.mode, cutoff.at::text as at
           from tenants cross join (values ('live'), ('test')) modes(mode) cross join lateral (
             select ${column} as at from ${quoted(rule.table)} where tenant_id = tenants.id and mode = modes.mode
             order by ${column} desc, id desc offset $1 limit 1) cutoff`,
      ),
      [rule.keepNewestPerTenantMode],
    );
    for (const row of crowded)
      deleted += await deleteBatches(handle, rule, `tenant_id = $1 and mode = $2 and ${column} <= $3::timestamptz`, [
        row.tenant_id,
        row.mode,
        row.at,
      ]);
  }
  return deleted;
}

/** Deletes what the rules let go, rule by rule; rows deleted per rule's name. */
export async function prune(
  handle: DatabaseHandle,
  rules: RetentionRule[],
  now = new Date(),
): Promise<Record<string, number>> {
  return handle.withAdvisoryLock(PRUNE_LOCK_KEY, async () => {
    const deleted: Record<string, number> = {};
    for (const rule of rules) deleted[rule.name ?? rule.table] = await pruneRule(handle, rule, now);
    return deleted;
  });
}

/**
 * How often each worker process prunes: often enough that a flood of refused callbacks between two
 * prunes stays small beside the per-tenant cap; a prune with nothing to delete costs a few index probes.
 */
const PRUNE_INTERVAL_MS = PRUNE_INTERVAL_MINUTES * 60_000;
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
