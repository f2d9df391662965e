// The audit trail: every change made on the admin host, newest first, filtered by operator,
// tenant (changes whose target is the tenant), action and time. Each change reads as a sentence
// ("Deactivated tenant Acme Travel") linking to its target, with the values before and after; a
// list rather than a table, so that it reads at phone width.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { type AuditEventRow, type FieldChange, listAuditActions, listAuditEvents } from '../../../../audit/index.js';
import { listOperators } from '../../../../operators/index.js';
import { listTenants } from '../../../../tenants/index.js';
import { type Html, html, when } from '../html.js';
import { consoleUrl, page, pager } from '../layout.js';
import { type ConsoleDependencies, sendPage } from '../respond.js';

const PAGE_SIZE = 50;
const OptionalUuid = Type.Optional(Type.Union([Type.Literal(''), Type.String({ format: 'uuid' })]));
const AuditQuery = Type.Object({
  operator: OptionalUuid,
  tenant: OptionalUuid,
  action: Type.Optional(Type.String({ maxLength: 200 })),
  since: Type.Optional(Type.Union([Type.Literal(''), Type.String({ format: 'date' })])),
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
});

const option = (value: string, label: string, selected: string | undefined) =>
  html`<option value="${value}"${value === selected ? html` selected` : ''}>${label}</option>`;

/** Where a target is shown in the console; null for those without a page. */
function targetPath(type: string | null, id: string | null): string | null {
  if (!id) return null;
  switch (type) {
    case 'tenant':
      return `/tenants/${id}`;
    case 'invoice':
      return `/invoices/${id}`;
    case 'operator':
      return '/operators';
    case 'partner_key':
      return '/partner-keys';
    case 'default_prompts':
      return '/prompts';
    default:
      return null;
  }
}

/** The sentence, its target's name a link to it; a change recorded before sentences, as its route. */
function sentence(event: AuditEventRow): Html {
  if (event.summary === null) return html`<span class="mono">${event.action}</span>`;
  const path = targetPath(event.targetType, event.targetId);
  const label = event.targetLabel;
  const at = label ? event.summary.lastIndexOf(label) : -1;
  if (!path || !label || at < 0) return html`${event.summary}`;
  return html`${event.summary.slice(0, at)}<a href="${consoleUrl(path)}">${label}</a>${event.summary.slice(at + label.length)}`;
}

const shownValue = (value: FieldChange['before']) =>
  value === null || value === ''
    ? html`<span class="muted">none</span>`
    : html`<span class="mono">${String(value)}</span>`;

/** Through what it was made: the console, the admin API, or partnerctl on the database. */
function channel(event: AuditEventRow): string {
  const route = event.route ?? event.action;
  if (route.includes(' /console/')) return 'console';
  if (route.includes(' /admin/v1/')) return 'API';
  return event.status === null ? 'partnerctl' : 'API';
}

function entry(event: AuditEventRow): Html {
  const changes = (event.changes as FieldChange[] | null) ?? [];
  const who = event.operatorName ?? event.actor;
  return html`<li class="audit-event"><div class="what">${sentence(event)}${
    changes.length > 0 &&
    html`<ul class="changes">${changes.map(
      (change) => html`<li>${change.field}: ${shownValue(change.before)} → ${shownValue(change.after)}</li>`,
    )}</ul>`
  }</div><div class="meta muted">${when(event.occurredAt)} · ${who}${
    event.actor !== who && html` <span title="${event.actor}">${event.actor.replace(`${who} `, '')}</span>`
  } · ${channel(event)}${event.address && html` · from <span class="mono">${event.address}</span>`} · <span class="mono">${event.action}</span></div></li>`;
}

export const auditRoutes: FastifyPluginAsyncTypebox<ConsoleDependencies> = async (app, { context }) => {
  const { db } = context;

  app.get('/audit', { schema: { hide: true, querystring: AuditQuery } }, async (request, reply) => {
    const query = request.query;
    const pageNumber = query.page ?? 1;
    const [operators, tenants, actions, listing] = await Promise.all([
      listOperators(db),
      listTenants(db),
      listAuditActions(db),
      listAuditEvents(
        db,
        {
          operatorId: query.operator || undefined,
          targetId: query.tenant || undefined,
          action: query.action || undefined,
          since: query.since ? new Date(`${query.since}T00:00:00Z`) : undefined,
        },
        { limit: PAGE_SIZE, offset: (pageNumber - 1) * PAGE_SIZE },
      ),
    ]);
    const content = html`<form method="get" class="filters">
<label>Operator <select name="operator" data-autosubmit><option value="">all</option>${operators.map((operator) =>
      option(operator.id, operator.name, query.operator),
    )}</select></label>
<label>Tenant <select name="tenant" data-autosubmit><option value="">all</option>${tenants.map((tenant) =>
      option(tenant.id, tenant.name, query.tenant),
    )}</select></label>
<label>Action <select name="action" data-autosubmit><option value="">all</option>${actions.map((action) =>
      option(action, action, query.action),
    )}</select></label>
<label>Since <input type="date" name="since" value="${query.since ?? ''}"></label>
<button>Filter</button></form>
<p class="muted">${listing.count} change${listing.count === 1 ? '' : 's'}</p>
${listing.rows.length === 0 ? html`<p class="muted">No change matches.</p>` : html`<ol class="audit">${listing.rows.map(entry)}</ol>`}
${pager('/audit', { operator: query.operator, tenant: query.tenant, action: query.action, since: query.since }, pageNumber, pageNumber * PAGE_SIZE < listing.count)}`;
    return sendPage(reply, page(request.consoleView, 'audit', 'Audit trail', content));
  });
};
