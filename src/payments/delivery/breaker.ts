// The circuit breaker of each tenant's payment endpoint: after a run of failed attempts its waiting
// requests stop taking the worker's slots; one probe goes after a cool-down that doubles while the
// endpoint keeps failing, and a success releases the rest. Written here rather than taken from a
// library (opossum, cockatiel): those keep the state in one process's memory, and ours must be one
// state for every instance, in the database the take (requests.ts) reads it from, changed in the same
// transaction that records the attempt.
import { desc, eq, ne } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { paymentEndpointBreakerEvents, paymentEndpointBreakers, tenants } from '../../db/schema.js';
import { type RunStatement, statement } from '../../db/statements.js';

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

export interface Breaker {
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

interface StoredBreaker {
  state: BreakerState;
  consecutive_failures: number;
  cool_down_seconds: number;
  /** As its text, handed back as it came. */
  probe_at: string | null;
  last_error: string | null;
}

const LOCK_BREAKER = statement<[tenantId: string], StoredBreaker>(
  `select state, consecutive_failures, cool_down_seconds, probe_at, last_error
     from payment_endpoint_breakers where tenant_id = $1 for update`,
);
const CLEAR_BREAKER = statement<[tenantId: string], never>(
  'delete from payment_endpoint_breakers where tenant_id = $1',
);
/** $5: probe after the cool-down (opened, or a probe failed), else at $6; $8: the state changed now. */
const STORE_BREAKER = statement<
  [
    tenantId: string,
    state: BreakerState,
    consecutiveFailures: number,
    coolDownSeconds: number,
    probeAfterCoolDown: boolean,
    probeAt: string | null,
    lastError: string | null,
    changed: boolean,
  ],
  never
>(
  `insert into payment_endpoint_breakers as b
          (tenant_id, state, consecutive_failures, cool_down_seconds, probe_at, last_error, changed_at)
   values ($1, $2, $3, $4, case when $5 then now() + make_interval(secs => $4) else $6::timestamptz end, $7, now())
   on conflict (tenant_id) do update
      set state = excluded.state, consecutive_failures = excluded.consecutive_failures,
          cool_down_seconds = excluded.cool_down_seconds, probe_at = excluded.probe_at, last_error = excluded.last_error,
          changed_at = case when $8 then now() else b.changed_at end`,
);
const BREAKER_EVENT = statement<
  [tenantId: string, event: 'opened' | 'probe_failed' | 'closed', consecutiveFailures: number, error: string | null],
  never
>(
  `insert into payment_endpoint_breaker_events (tenant_id, event, consecutive_failures, error)
   values ($1, $2, $3, $4)`,
);

/**
 * Applies an attempt's verdict to the tenant's breaker inside the transaction of `run` (the row
 * locked, so concurrent attempts apply in turn) and records the event it makes; returns that event.
 */
export async function recordVerdict(
  run: RunStatement,
  tenantId: string,
  verdict: EndpointVerdict,
  error: string | null,
  policy: BreakerPolicy,
): Promise<BreakerChange | null> {
  const [row] = await run(LOCK_BREAKER, [tenantId]);
  // The common case, a healthy endpoint answering: nothing to write.
  if (!row && verdict === 'alive') return null;
  const current: Breaker = row
    ? { state: row.state, consecutiveFailures: row.consecutive_failures, coolDownSeconds: row.cool_down_seconds }
    : CLOSED;
  const { breaker, event } = nextBreaker(current, verdict, policy);
  if (row && row.state === 'closed' && breaker.state === 'closed' && breaker.consecutiveFailures === 0) {
    await run(CLEAR_BREAKER, [tenantId]);
    return null;
  }
  const probeAfterCoolDown = event === 'opened' || event === 'probe_failed';
  await run(STORE_BREAKER, [
    tenantId,
    breaker.state,
    breaker.consecutiveFailures,
    breaker.coolDownSeconds,
    probeAfterCoolDown,
    row && breaker.state !== 'closed' ? row.probe_at : null,
    verdict === 'failing' ? error : (row?.last_error ?? null),
    event !== null,
  ]);
  if (!event) return null;
  await run(BREAKER_EVENT, [
    tenantId,
    event,
    current.consecutiveFailures + (verdict === 'failing' ? 1 : 0),
    verdict === 'failing' ? error : null,
  ]);
  return { event, breaker };
}

/** A change of a breaker's state, for the log. */
export interface BreakerChange {
  event: 'opened' | 'probe_failed' | 'closed';
  breaker: Breaker;
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
    .where(ne(paymentEndpointBreakers.state, 'closed'))
    .orderBy(paymentEndpointBreakers.changedAt);
  return rows.map((row) => ({ ...row.breaker, tenantName: row.tenantName }));
}
