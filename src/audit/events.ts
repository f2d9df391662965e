// The audit trail of operators' changes: recorded by the admin host for every change it makes and
// by partnerctl commands that change the database directly; listed newest first.
import { desc, eq } from 'drizzle-orm';
import type { Executor } from '../db/client.js';
import { auditEvents } from '../db/schema.js';
import type { Page } from '../geo/index.js';

export type AuditEventRow = typeof auditEvents.$inferSelect;

interface AuditEventInput {
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
  });
}

interface AuditEventFilter {
  targetId?: string;
}

export async function listAuditEvents(
  db: Executor,
  filter: AuditEventFilter,
  page: Page,
): Promise<{ count: number; rows: AuditEventRow[] }> {
  const where = filter.targetId === undefined ? undefined : eq(auditEvents.targetId, filter.targetId);
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
