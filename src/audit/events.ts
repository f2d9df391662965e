// The audit trail of operators' changes: recorded by the admin host for every change it makes and
// by partnerctl commands that change the database directly; listed newest first.
import { and, desc, eq, gte } from 'drizzle-orm';
import type { Executor } from '../db/client.js';
import { auditEvents } from '../db/schema.js';
import type { Page } from '../geo/index.js';

export type AuditEventRow = typeof auditEvents.$inferSelect;

export interface AuditEventInput {
  /** Who: the admin token, a console session's label, a partnerctl command's user. */
  actor: string;
  /** What: e.g. `PATCH /admin/v1/tenants/:id` (a route template, never a concrete URL). */
  action: string;
  /** On what: the id of the changed or created resource, when there is one. */
  targetId?: string | null;
  /** The names of the fields sent, never their values (an endpoint URL may carry a password). */
  fields?: string[];
  /** The HTTP status answered; null outside HTTP. */
  status?: number | null;
  /** From which client address; null outside HTTP. */
  address?: string | null;
  requestId?: string | null;
  /** The named operator who made it (id null: the bootstrap ADMIN_TOKEN); null when none did. */
  operator?: { id: string | null; name: string } | null;
}

export async function recordAuditEvent(db: Executor, event: AuditEventInput): Promise<void> {
  await db.insert(auditEvents).values({
    actor: event.actor,
    action: event.action,
    targetId: event.targetId ?? null,
    fields: event.fields ?? [],
    status: event.status ?? null,
    address: event.address ?? null,
    requestId: event.requestId ?? null,
    operatorId: event.operator?.id ?? null,
    operatorName: event.operator?.name ?? null,
  });
}

interface AuditEventFilter {
  targetId?: string;
  operatorId?: string;
  /** The exact action, e.g. `PATCH /admin/v1/tenants/:id`. */
  action?: string;
  /** Only events at or after this time. */
  since?: Date;
}

export async function listAuditEvents(
  db: Executor,
  filter: AuditEventFilter,
  page: Page,
): Promise<{ count: number; rows: AuditEventRow[] }> {
  const where = and(
    filter.targetId === undefined ? undefined : eq(auditEvents.targetId, filter.targetId),
    filter.operatorId === undefined ? undefined : eq(auditEvents.operatorId, filter.operatorId),
    filter.action === undefined ? undefined : eq(auditEvents.action, filter.action),
    filter.since === undefined ? undefined : gte(auditEvents.occurredAt, filter.since),
  );
  const [counted, rows] = await Promise.all([
    db.$count(auditEvents, where),
    db
      .select()
      .from(auditEvents)
      .where(where)
      .orderBy(desc(auditEvents.occurredAt), desc(auditEvents.id))
      .limit(page.limit)
      .offset(page.offset),
  ]);
  return { count: counted, rows };
}

/** Every action recorded so far, sorted: what an audit filter can choose from. */
export async function listAuditActions(db: Executor): Promise<string[]> {
  const rows = await db.selectDistinct({ action: auditEvents.action }).from(auditEvents).orderBy(auditEvents.action);
  return rows.map((row) => row.action);
}
