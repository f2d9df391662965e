// The audit trail of operators' changes: recorded by the admin host for every change it makes and
// by partnerctl commands that change the database directly; listed newest first.
import { and, desc, eq, gte } from 'drizzle-orm';
import { type Executor, runIn } from '../db/client.js';
import { auditEvents } from '../db/schema.js';
import { statement } from '../db/statements.js';
import type { Page } from '../geo/index.js';
import type { FieldChange, TargetType } from './targets.js';

export type AuditEventRow = typeof auditEvents.$inferSelect;

export interface AuditEventInput {
  /** Who: the admin token, a console session's label, a partnerctl command's user. */
  actor: string;
  /** What: the action's name, the same on every route that makes it (`tenant.deactivate`). */
  action: string;
  /** Through which route: method and route template (never a concrete URL); null outside HTTP. */
  route?: string | null;
  /** The change in words, e.g. `Deactivated tenant Acme Travel`. */
  summary?: string | null;
  targetType?: TargetType | null;
  /** The target's name when the change was made. */
  targetLabel?: string | null;
  /** The values that changed (none secret). */
  changes?: FieldChange[];
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

/** The columns an event fills (the id and the time are the table's defaults). */
const EVENT_COLUMNS =
  'actor, action, target_id, fields, status, address, request_id, operator_id, operator_name, route, summary, ' +
  'target_type, target_label, changes';

/**
 * The insert of one event from `record`, the SQL of a jsonb `auditEventRecord`: recordAuditEvent's
 * statement, and a part of a statement of several writes that records its change with them.
 */
export const insertAuditEvent = (record: string) =>
  `insert into audit_events (${EVENT_COLUMNS})
   select ${EVENT_COLUMNS} from jsonb_populate_record(null::audit_events, ${record})`;

/** The event as the jsonb `insertAuditEvent` reads: its columns by name. */
export function auditEventRecord(event: AuditEventInput): string {
  return JSON.stringify({
    actor: event.actor,
    action: event.action,
    target_id: event.targetId ?? null,
    fields: event.fields ?? [],
    status: event.status ?? null,
    address: event.address ?? null,
    request_id: event.requestId ?? null,
    operator_id: event.operator?.id ?? null,
    operator_name: event.operator?.name ?? null,
    route: event.route ?? null,
    summary: event.summary ?? null,
    target_type: event.targetType ?? null,
    target_label: event.targetLabel ?? null,
    changes: event.changes ?? [],
  });
}

const RECORD_AUDIT_EVENT = statement<[record: string], never>(insertAuditEvent('$1::jsonb'));

export async function recordAuditEvent(db: Executor, event: AuditEventInput): Promise<void> {
  await runIn(db)(RECORD_AUDIT_EVENT, [auditEventRecord(event)]);
}

interface AuditEventFilter {
  targetId?: string;
  operatorId?: string;
  /** The exact action, e.g. `tenant.deactivate`. */
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
