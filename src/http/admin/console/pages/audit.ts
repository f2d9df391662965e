// The audit trail: every change made on the admin host, newest first, filtered by operator,
// tenant (changes whose target is the tenant), action and time.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { listAuditActions, listAuditEvents } from '../../../../audit/index.js';
import { listOperators } from '../../../../operators/index.js';
import { listTenants } from '../../../../tenants/index.js';
import { html, when } from '../html.js';
import { page, pager, table } from '../layout.js';
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
    const tenantNames = new Map(tenants.map((tenant) => [tenant.id, tenant.name]));
    const rows = listing.rows.map(
      (event) =>
        html`<tr><td>${when(event.occurredAt)}</td><td>${event.operatorName ?? event.actor}${
          event.actor !== event.operatorName && html`<div class="muted small">${event.actor}</div>`
        }</td><td class="mono">${event.action}</td><td>${
          event.targetId &&
          (tenantNames.get(event.targetId) ?? html`<span class="mono">${event.targetId.slice(0, 8)}</span>`)
        }</td><td>${event.fields.join(', ')}</td><td class="num">${event.status ?? '—'}</td><td class="mono">${event.address ?? '—'}</td></tr>`,
    );
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
${table(['When', 'Operator', 'Action', 'Target', 'Fields', 'Status', 'From'], rows, 'No change matches.')}
${pager('/audit', { operator: query.operator, tenant: query.tenant, action: query.action, since: query.since }, pageNumber, pageNumber * PAGE_SIZE < listing.count)}`;
    return sendPage(reply, page(request.consoleView, 'audit', 'Audit trail', content));
  });
};
