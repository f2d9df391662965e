// The circuit breaker of each tenant's payment endpoint: after a run of failed attempts its waiting
// requests stop taking the worker's slots; one probe goes after a cool-down that doubles while the
// endpoint keeps failing, and a success releases the rest. Written here rather than taken from a
// library (opossum, cockatiel): those keep the state in one process's memory, and ours must be one
// state for every instance, in the database the fetch (queue.ts) reads it from, changed in the same
// transaction that records the attempt.
import { desc, eq, sql } from 'drizzle-orm';
import type { Executor, Transaction } from '../db/client.js';
import { paymentEndpointBreakerEvents, paymentEndpointBreakers, tenants } from '../db/schema.js';

export type BreakerState = 'closed' | 'open' | 'half_open';
export type BreakerRow = typeof paymentEndpointBreakers.$inferSelect;
export type BreakerEventRow = typeof paymentEndpointBreakerEvents.$inferSelect;

export interface BreakerPolicy {
  /** PAYMENT_BREAKER_FAILURES: consecutive failed attempts that open the breaker. */
  failures: number;
  /** PAYMENT_BREAKER_COOL_DOWN_SECONDS: the wait before the first probe. */
  coolDownSeconds: number;
  /** The longest wait between probes. */
  maxCoolDownSeconds: number;
}

/** What an attempt said about the endpoint: nothing (never sent), alive (any answer but a failure), failing. */
export type EndpointVerdict = 'alive' | 'failing';

interface Breaker {
  state: BreakerState;
  consecutiveFailures: number;
  coolDownSeconds: number;
}

export const CLOSED: Breaker = { state: 'closed', consecutiveFailures: 0, coolDownSeconds: 0 };

/**
 * The breaker after an attempt, and the event it makes, if any. Any sign of life closes it. A
 * failure opens a closed breaker at the end of a run, and sends a half-open one (its probe failed)
 * back to open with twice the cool-down; failures of requests already under way when it opened
 * change nothing but the count.
 */
export function nextBreaker(
  current: Breaker,
  verdict: EndpointVerdict,
  policy: BreakerPolicy,
): { breaker: Breaker; event: 'opened' | 'probe_failed' | 'closed' | null } {
  if (verdict === 'alive') return { breaker: CLOSED, event: current.state === 'closed' ? null : 'closed' };
  const consecutiveFailures = current.consecutiveFailures + 1;
  if (current.state === 'half_open') {
    const coolDownSeconds = Math.min(policy.maxCoolDownSeconds, current.coolDownSeconds * 2);
    return { breaker: { state: 'open', consecutiveFailures, coolDownSeconds }, event: 'probe_failed' };
  }
  if (current.state === 'closed' && consecutiveFailures >= policy.failures) {
    return {
      breaker: { state: 'open', consecutiveFailures, coolDownSeconds: policy.coolDownSeconds },
      event: 'opened',
    };
  }
  return { breaker: { ...current, consecutiveFailures }, event: null };
}

/**
 * Applies an attempt's verdict to the tenant's breaker inside `tx` (the row locked, so concurrent
 * attempts apply in turn) and records the event it makes; returns that event.
 */
export async function recordVerdict(
  tx: Transaction,
  tenantId: string,
  verdict: EndpointVerdict,
  error: string | null,
  policy: BreakerPolicy,
): Promise<{ event: 'opened' | 'probe_failed' | 'closed'; breaker: Breaker } | null> {
  const [row] = await tx
    .select()
    .from(paymentEndpointBreakers)
    .where(eq(paymentEndpointBreakers.tenantId, tenantId))
    .for('update');
  // The common case, a healthy endpoint answering: nothing to write.
  if (!row && verdict === 'alive') return null;
  const current: Breaker = row
    ? {
        state: row.state as BreakerState,
        consecutiveFailures: row.consecutiveFailures,
        coolDownSeconds: row.coolDownSeconds,
      }
    : CLOSED;
  const { breaker, event } = nextBreaker(current, verdict, policy);
  if (row && row.state === 'closed' && breaker.state === 'closed' && breaker.consecutiveFailures === 0) {
    await tx.delete(paymentEndpointBreakers).where(eq(paymentEndpointBreakers.tenantId, tenantId));
    return null;
  }
  const probeAt =
    event === 'opened' || event === 'probe_failed'
      ? sql`now() + make_interval(secs => ${breaker.coolDownSeconds})`
      : row && breaker.state !== 'closed'
        ? row.probeAt
        : null;
  const values = {
    state: breaker.state,
    consecutiveFailures: breaker.consecutiveFailures,
    coolDownSeconds: breaker.coolDownSeconds,
    probeAt,
    lastError: verdict === 'failing' ? error : (row?.lastError ?? null),
    ...(event && { changedAt: sql`now()` }),
  };
  await tx
    .insert(paymentEndpointBreakers)
    .values({ tenantId, ...values })
    .onConflictDoUpdate({ target: paymentEndpointBreakers.tenantId, set: values });
  if (!event) return null;
  await tx.insert(paymentEndpointBreakerEvents).values({
    tenantId,
    event,
    consecutiveFailures: current.consecutiveFailures + (verdict === 'failing' ? 1 : 0),
    error: verdict === 'failing' ? error : null,
  });
  return { event, breaker };
}

/** How many history entries the tenant page shows. */
const HISTORY_LENGTH = 20;

/** The tenant's breaker (closed when it has never failed) and its latest events, newest first. */
export async function endpointBreaker(
  db: Executor,
  tenantId: string,
): Promise<{ breaker: BreakerRow | null; history: BreakerEventRow[] }> {
  const [breaker] = await db
    .select()
    .from(paymentEndpointBreakers)
    .where(eq(paymentEndpointBreakers.tenantId, tenantId));
  const history = await db
    .select()
    .from(paymentEndpointBreakerEvents)
    .where(eq(paymentEndpointBreakerEvents.tenantId, tenantId))
    .orderBy(desc(paymentEndpointBreakerEvents.at))
    .limit(HISTORY_LENGTH);
  return { breaker: breaker ?? null, history };
}

/** Tenants whose breaker is not closed, longest first: the console's home page and the `/metrics` gauge. */
export async function failingEndpoints(db: Executor): Promise<(BreakerRow & { tenantName: string })[]> {
  const rows = await db
    .select({ breaker: paymentEndpointBreakers, tenantName: tenants.name })
    .from(paymentEndpointBreakers)
    .innerJoin(tenants, eq(tenants.id, paymentEndpointBreakers.tenantId))
    .where(sql`${paymentEndpointBreakers.state} <> 'closed'`)
    .orderBy(paymentEndpointBreakers.changedAt);
  return rows.map((row) => ({ ...row.breaker, tenantName: row.tenantName }));
}
