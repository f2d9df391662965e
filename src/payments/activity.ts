// What operators glance at: payment notifications and payment request attempts per hour over the
// last day, by outcome, of one mode's invoices (live by default: test mode stays out of the live
// figures, and has figures of its own). Hours are counted from the epoch, so no time zone setting
// moves a bucket.
import { and, eq, gte, sql } from 'drizzle-orm';
import type { Executor } from '../db/client.js';
import { invoices, paymentDeliveries, paymentEvents } from '../db/schema.js';
import type { Mode } from '../tenants/index.js';

export const NOTIFICATION_OUTCOMES = ['paid', 'failed', 'refunded', 'not applied'] as const;
export const ATTEMPT_OUTCOMES = ['delivered', 'retrying', 'failed'] as const;

export interface HourlySeries<Outcome extends string> {
  /** The start of each hour, oldest first; the last is the current hour. */
  hours: Date[];
  counts: Record<Outcome, number[]>;
}

const HOUR_MS = 3_600_000;

function bucket<Outcome extends string>(
  outcomes: readonly Outcome[],
  rows: { hour: number; outcome: string; count: number }[],
  firstHour: number,
  hourCount: number,
): HourlySeries<Outcome> {
  const counts = Object.fromEntries(outcomes.map((outcome) => [outcome, new Array(hourCount).fill(0)])) as Record<
    Outcome,
    number[]
  >;
  for (const row of rows) {
    const index = row.hour - firstHour;
    if (index >= 0 && index < hourCount && row.outcome in counts) counts[row.outcome as Outcome][index] += row.count;
  }
  const hours = Array.from({ length: hourCount }, (_, i) => new Date((firstHour + i) * HOUR_MS));
  return { hours, counts };
}

/** Per hour over the last `hourCount` hours (the current one included), invoices of `mode` only. */
export async function hourlyPaymentActivity(db: Executor, mode: Mode = 'live', now = new Date(), hourCount = 24) {
  const firstHour = Math.floor(now.getTime() / HOUR_MS) - hourCount + 1;
  const since = new Date(firstHour * HOUR_MS);
  const hourOf = (column: typeof paymentEvents.receivedAt | typeof paymentDeliveries.attemptedAt) =>
    sql<number>`floor(extract(epoch from ${column}) / 3600)::int`.mapWith(Number);
  const count = sql<number>`count(*)::int`.mapWith(Number);
  const notifications = await db
    .select({
      hour: hourOf(paymentEvents.receivedAt),
      outcome: sql<string>`case when ${paymentEvents.applied} then ${paymentEvents.status} else 'not applied' end`,
      count,
    })
    .from(paymentEvents)
    .innerJoin(invoices, eq(invoices.id, paymentEvents.invoiceId))
    .where(and(gte(paymentEvents.receivedAt, since), eq(invoices.mode, mode)))
    .groupBy(sql`1`, sql`2`);
  const attempts = await db
    .select({
      hour: hourOf(paymentDeliveries.attemptedAt),
      // The "(final: not retried)" mark, not next_retry_at: attempts recorded before that column also count.
      outcome: sql<string>`case when ${paymentDeliveries.error} is null then 'delivered'
        when ${paymentDeliveries.error} like '%(final: not retried)' then 'failed' else 'retrying' end`,
      count,
    })
    .from(paymentDeliveries)
    .innerJoin(invoices, eq(invoices.id, paymentDeliveries.invoiceId))
    .where(and(gte(paymentDeliveries.attemptedAt, since), eq(invoices.mode, mode)))
    .groupBy(sql`1`, sql`2`);
  return {
    notifications: bucket(NOTIFICATION_OUTCOMES, notifications, firstHour, hourCount),
    attempts: bucket(ATTEMPT_OUTCOMES, attempts, firstHour, hourCount),
  };
}
