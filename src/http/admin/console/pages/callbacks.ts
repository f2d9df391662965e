// A tenant's payment callbacks as recorded, accepted and refused, live and test, newest first: what
// the operator looks at when a partner asks "why didn't our paid go through?". The same log the
// partner reads at /api/v1/payment-notifications/ (src/payments/partner-view.ts).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  listNotificationLog,
  NOTIFICATION_LOG_OUTCOMES,
  type NotificationLogEntry,
} from '../../../../payments/index.js';
import { getTenant } from '../../../../tenants/index.js';
import { IdParams } from '../../../schemas.js';
import { type Html, html, when } from '../html.js';
import { badge, consoleUrl, page, pager, table } from '../layout.js';
import { type ConsoleDependencies, sendPage } from '../respond.js';
import { modeBadge, notAppliedBadge, prettyPayload } from './invoices.js';

const PAGE_SIZE = 50;

const CallbackQuery = Type.Object({
  outcome: Type.Optional(
    Type.Union([Type.Literal(''), ...NOTIFICATION_LOG_OUTCOMES.map((outcome) => Type.Literal(outcome))]),
  ),
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
});

function callbackRow(entry: NotificationLogEntry): Html {
  const answer =
    entry.outcome === 'accepted'
      ? html`${badge('accepted', 'ok')} ${entry.notAppliedReason && notAppliedBadge(entry.notAppliedReason)}`
      : html`${badge('refused', 'bad')} HTTP ${entry.httpStatus}: <strong class="reason">${entry.error}</strong>`;
  const invoice = entry.invoiceId
    ? html`<a class="mono" href="${consoleUrl(`/invoices/${entry.invoiceId}`)}">${entry.invoiceId.slice(0, 8)}</a>`
    : html`<span class="muted">none</span>`;
  const sent = entry.status && html`${entry.status} <span class="mono">${entry.transactionId}</span>`;
  const payload =
    entry.payload === null
      ? html`<span class="muted">not read</span>`
      : html`<details><summary>Payload${entry.payloadTruncated ? ' (cut short)' : ''}</summary><pre class="payload">${prettyPayload(entry.payload)}</pre></details>`;
  return html`<tr class="callback ${entry.outcome}"><td>${when(entry.receivedAt)}</td><td>${answer} ${modeBadge(entry.mode)}</td><td>${invoice}</td><td>${sent}</td><td class="mono">${entry.requestId ?? '—'}</td><td>${payload}</td></tr>`;
}

export const callbackRoutes: FastifyPluginAsyncTypebox<ConsoleDependencies> = async (app, { context }) => {
  const { db } = context;

  app.get(
    '/tenants/:id/callbacks',
    { schema: { hide: true, params: IdParams, querystring: CallbackQuery } },
    async (request, reply) => {
      const tenant = await getTenant(db, request.params.id);
      const outcome = request.query.outcome || undefined;
      const pageNumber = request.query.page ?? 1;
      const { count, rows } = await listNotificationLog(
        db,
        { tenantId: tenant.id },
        { outcome },
        {
          limit: PAGE_SIZE,
          offset: (pageNumber - 1) * PAGE_SIZE,
        },
      );
      const outcomeOptions = NOTIFICATION_LOG_OUTCOMES.map(
        (choice) => html`<option${choice === outcome ? html` selected` : ''}>${choice}</option>`,
      );
      const content = html`<div class="toolbar"><a href="${consoleUrl(`/tenants/${tenant.id}`)}">← ${tenant.name}</a> <span class="muted">${count} recorded; refused ones are kept for ${context.config.retention.refusedNotificationsDays} days</span></div>
<form method="get" class="filters">
<label>Outcome <select name="outcome" data-autosubmit><option value="">all</option>${outcomeOptions}</select></label>
<button>Filter</button></form>
${table(['Received', 'Our answer', 'Invoice', 'Status sent', 'Request id', 'Payload'], rows.map(callbackRow), 'No callback recorded.')}
${pager(`/tenants/${tenant.id}/callbacks`, { outcome }, pageNumber, pageNumber * PAGE_SIZE < count)}`;
      return sendPage(reply, page(request.consoleView, 'tenants', `Callbacks of ${tenant.name}`, content));
    },
  );
};
