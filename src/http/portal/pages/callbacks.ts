// Callbacks: every payment callback the partner sent with its key (of the session's mode), accepted
// and refused, newest first, with the reason we answered and the payload as received; filtered by
// outcome and invoice, paged. The reason is shown as we answered it, in the words the partner's
// own logs hold.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { listNotificationLog, NOTIFICATION_LOG_OUTCOMES, type NotificationLogEntry } from '../../../payments/index.js';
import { type Html, html } from '../../html.js';
import { badge, cardTable } from '../../pages/blocks.js';
import { prettyPayload } from '../../pages/payload.js';
import { sendPage } from '../../pages/protection.js';
import { choiceFilter, page, pager } from '../layout.js';
import type { Locale } from '../locale.js';
import { PageNumber, type PortalDependencies, pageCount, rowsOfPage, scopeOf } from './scope.js';

function what(locale: Locale, entry: NotificationLogEntry): Html {
  if (entry.outcome === 'refused') return html`<bdi class="error-text">${entry.error}</bdi>`;
  return html`<bdi>${entry.status}</bdi>${entry.transactionId && html` <bdi class="mono">${entry.transactionId}</bdi>`}${
    entry.notAppliedReason &&
    html`<br><span class="muted">${locale.t(`callbacks.notApplied.${entry.notAppliedReason}`)}</span>`
  }`;
}

/** Callbacks as rows: when, outcome, status or reason, invoice, our answer, the payload. */
export function callbackTable(locale: Locale, rows: NotificationLogEntry[], empty: string): Html {
  const t = locale.t;
  return cardTable(
    [
      t('callbacks.received'),
      t('callbacks.outcome'),
      t('callbacks.what'),
      t('callbacks.invoice'),
      t('callbacks.answer'),
      t('callbacks.payload'),
    ],
    rows.map((entry) => [
      locale.time(entry.receivedAt),
      badge(t(`outcome.${entry.outcome}`), entry.outcome === 'accepted' ? 'ok' : 'bad'),
      html`<span class="wrap">${what(locale, entry)}</span>`,
      entry.invoiceId
        ? html`<a class="mono" href="/payment-requests/${entry.invoiceId}">${entry.invoiceId.slice(0, 8)}</a>`
        : html`<span class="muted">${t('callbacks.noInvoice')}</span>`,
      html`<span dir="ltr">HTTP ${entry.httpStatus}</span>`,
      entry.payload === null
        ? html``
        : html`<details><summary>${t('callbacks.showPayload')}</summary><pre class="payload" dir="ltr">${prettyPayload(entry.payload)}</pre>${
            entry.payloadTruncated && html`<p class="hint">${t('callbacks.truncated')}</p>`
          }${entry.requestId && html`<p class="hint mono">${t('callbacks.requestId', { id: entry.requestId })}</p>`}</details>`,
    ]),
    empty,
  );
}

export const callbackRoutes: FastifyPluginAsyncTypebox<PortalDependencies> = async (app, { context }) => {
  app.get(
    '/callbacks',
    {
      schema: {
        hide: true,
        querystring: Type.Object({
          outcome: Type.Optional(
            Type.Union([Type.Literal(''), ...NOTIFICATION_LOG_OUTCOMES.map((outcome) => Type.Literal(outcome))]),
          ),
          invoice: Type.Optional(Type.Union([Type.Literal(''), Type.String({ format: 'uuid' })])),
          page: PageNumber,
        }),
      },
    },
    async (request, reply) => {
      const view = request.portalView;
      const { locale } = view;
      const t = locale.t;
      const { outcome, invoice, page: pageNumber = 1 } = request.query;
      const { count, rows } = await listNotificationLog(
        context.db,
        scopeOf(request),
        { outcome: outcome || undefined, invoiceId: invoice || undefined },
        rowsOfPage(pageNumber),
      );
      const outcomes = NOTIFICATION_LOG_OUTCOMES.map((value): [string, string] => [value, t(`outcome.${value}`)]);
      const filters = html`<form method="get" class="filters" role="search">
${choiceFilter(locale, 'outcome', 'filter.outcome', outcome, outcomes)}
<label>${t('filter.invoice')} <input type="search" name="invoice" value="${invoice ?? ''}" dir="ltr" pattern="[0-9a-fA-F\\-]{36}" placeholder="3f1c2b9e-…"></label>
<button>${t('filter.apply')}</button></form>`;
      return sendPage(
        reply,
        page(
          view,
          'callbacks',
          t('callbacks.heading'),
          html`<p class="hint">${t('callbacks.lead')}</p>${filters}${callbackTable(locale, rows, t('callbacks.none'))}${pager(
            locale,
            '/callbacks',
            { outcome, invoice },
            pageNumber,
            pageCount(count),
          )}`,
        ),
      );
    },
  );
};
