// Payment requests: the session's invoices, newest first, paged and filtered by status; one
// request with what we sent, every attempt and what the endpoint answered, the callbacks about it,
// and "send it again" (write access). Read through the self-serve API's domain functions.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { notFound } from '../../../errors.js';
import {
  getPaymentRequest,
  lastRequestSent,
  listNotificationLog,
  listPaymentRequests,
  type PaymentDeliveryRow,
  type PaymentRequestSummary,
  paymentContext,
  paymentMessageId,
  resendPaymentRequest,
  type SentRequest,
} from '../../../payments/index.js';
import { getTenant } from '../../../tenants/index.js';
import { isUuid } from '../../../text.js';
import { type Html, html } from '../../html.js';
import { badge, cardTable } from '../../pages/blocks.js';
import { sendPage } from '../../pages/protection.js';
import { choiceFilter, page, pager, postForm } from '../layout.js';
import type { Locale } from '../locale.js';
import type { MessageKey } from '../messages/en.js';
import { callbackTable } from './callbacks.js';
import { PageNumber, type PortalDependencies, pageCount, rowsOfPage, scopeOf } from './scope.js';

const INVOICE_STATUSES = ['pending', 'failed', 'paid', 'refunded'] as const;
const STATUS_KIND: Record<string, string> = { pending: 'wait', failed: 'bad', paid: 'ok', refunded: 'off' };

export const statusBadge = (locale: Locale, status: string) =>
  badge(
    (INVOICE_STATUSES as readonly string[]).includes(status) ? locale.t(`status.${status}` as MessageKey) : status,
    STATUS_KIND[status] ?? 'off',
  );

export const requestPath = (invoiceId: string) => `/payment-requests/${invoiceId}`;

function attemptBadge(locale: Locale, delivery: PaymentDeliveryRow | undefined): Html {
  if (!delivery) return html`<span class="muted">—</span>`;
  return delivery.error === null
    ? badge(locale.t('request.delivered'), 'ok')
    : badge(delivery.httpStatus === null ? locale.t('request.noAnswer') : `HTTP ${delivery.httpStatus}`, 'bad');
}

/** Payment requests as rows linking to their pages. */
export function requestTable(locale: Locale, rows: PaymentRequestSummary[]): Html {
  const t = locale.t;
  return cardTable(
    [
      t('requests.invoice'),
      t('requests.created'),
      t('requests.amount'),
      t('requests.status'),
      t('requests.lastAttempt'),
    ],
    rows.map(({ invoice, deliveries }) => [
      html`<a class="mono" href="${requestPath(invoice.id)}">${invoice.id.slice(0, 8)}</a>`,
      locale.time(invoice.createdAt),
      html`${locale.amount(invoice.amount, invoice.currency)}`,
      statusBadge(locale, invoice.status),
      html`${attemptBadge(locale, deliveries.at(-1))} <span class="muted">(${locale.number(deliveries.length)})</span>`,
    ]),
    t('requests.none'),
    [2],
  );
}

function attemptEntry(locale: Locale, delivery: PaymentDeliveryRow): Html {
  const t = locale.t;
  const answered =
    delivery.httpStatus === null
      ? t('request.noAnswer')
      : t('request.answered', {
          status: delivery.httpStatus,
          ms: locale.number(delivery.latencyMs ?? 0),
        });
  return html`<li class="event attempt"><div class="when">${locale.time(delivery.attemptedAt)}</div><div class="what">
<h3>${t('request.attemptNumber', { number: locale.number(delivery.attempt) })} ${attemptBadge(locale, delivery)}</h3>
<p>${answered}</p>
${delivery.error && html`<p class="error-text"><bdi>${delivery.error}</bdi></p>`}
${delivery.nextRetryAt && html`<dl class="inline"><dt>${t('request.nextRetry')}</dt><dd>${locale.time(delivery.nextRetryAt)}</dd></dl>`}
<details><summary>${t('request.answerBody')}</summary><pre dir="ltr">${delivery.responseBody || t('request.emptyBody')}</pre></details>
</div></li>`;
}

/** What the last attempt sent: its URL, the headers a partner verifies with, the body exactly as signed. */
const sentCard = (locale: Locale, sent: SentRequest) =>
  html`<section class="card"><h2>${locale.t('request.sent')}</h2><p class="hint">${locale.t('request.sentLead', { number: locale.number(sent.attempt) })}</p>
<dl dir="ltr"><dt>POST</dt><dd class="mono wrap">${sent.url}</dd>
<dt>webhook-id</dt><dd class="mono wrap">${sent.webhookId}</dd>
<dt>webhook-timestamp</dt><dd class="mono">${sent.webhookTimestamp}</dd></dl>
<pre class="payload" dir="ltr">${sent.body}</pre></section>`;

/** Before any attempt has sent it: what the first will send. */
const upcomingCard = (locale: Locale, upcoming: unknown) =>
  html`<section class="card"><h2>${locale.t('request.toSend')}</h2><p class="hint">${locale.t('request.toSendLead')}</p><pre class="payload" dir="ltr">${JSON.stringify(upcoming, null, 2)}</pre></section>`;

export const requestRoutes: FastifyPluginAsyncTypebox<PortalDependencies> = async (app, { context, notifyUrl }) => {
  const { db, paymentQueue } = context;
  const hide = true;

  app.get(
    '/payment-requests',
    {
      schema: {
        hide,
        querystring: Type.Object({
          status: Type.Optional(
            Type.Union([Type.Literal(''), ...INVOICE_STATUSES.map((status) => Type.Literal(status))]),
          ),
          page: PageNumber,
        }),
      },
    },
    async (request, reply) => {
      const view = request.portalView;
      const { locale } = view;
      const t = locale.t;
      const { status, page: pageNumber = 1 } = request.query;
      const { count, rows } = await listPaymentRequests(
        db,
        scopeOf(request),
        { status: status || undefined },
        rowsOfPage(pageNumber),
      );
      const statuses = INVOICE_STATUSES.map((value): [string, string] => [value, t(`status.${value}`)]);
      const filters = html`<form method="get" class="filters" role="search">
${choiceFilter(locale, 'status', 'filter.status', status, statuses)}
<button>${t('filter.apply')}</button></form>`;
      return sendPage(
        reply,
        page(
          view,
          'requests',
          t('requests.heading'),
          html`<p class="hint">${t('requests.lead')}</p>${filters}${requestTable(locale, rows)}${pager(
            locale,
            '/payment-requests',
            { status },
            pageNumber,
            pageCount(count),
          )}`,
        ),
      );
    },
  );

  app.get(
    '/payment-requests/:invoice_id',
    { schema: { hide, params: Type.Object({ invoice_id: Type.String() }) } },
    async (request, reply) => {
      const view = request.portalView;
      const { locale } = view;
      const t = locale.t;
      const scope = scopeOf(request);
      const invoiceId = request.params.invoice_id;
      if (!isUuid(invoiceId)) throw notFound('Payment request');
      const { invoice, deliveries } = await getPaymentRequest(db, scope, invoiceId);
      const callbacks = await listNotificationLog(db, scope, { invoiceId }, { limit: 50, offset: 0 });
      const sent = lastRequestSent(deliveries);
      const sentOrUpcoming = sent
        ? sentCard(locale, sent)
        : upcomingCard(locale, {
            headers: { 'webhook-id': paymentMessageId(invoice.id), 'content-type': 'application/json' },
            body: paymentContext(invoice, (await getTenant(db, scope.tenantId)).gateway, notifyUrl),
          });
      const waiting = invoice.status === 'pending' && deliveries.length === 0;
      const resend =
        view.session.access === 'write' &&
        (invoice.status === 'pending'
          ? postForm(
              view,
              `${requestPath(invoice.id)}/resend`,
              html`<button>${t('request.resend')}</button> <span class="hint">${t('request.resendHint')}</span>`,
              'inline',
            )
          : html`<p class="muted">${t('request.notPendingNoResend')}</p>`);
      const content = html`<div class="toolbar">${statusBadge(locale, invoice.status)} <strong>${locale.amount(invoice.amount, invoice.currency)}</strong> ${resend}</div>
<div class="columns">
<section class="card"><h2>${t('request.details')}</h2><dl>
<dt>${t('requests.invoice')}</dt><dd class="mono wrap">${invoice.id}</dd>
<dt>${t('requests.created')}</dt><dd>${locale.time(invoice.createdAt)}</dd>
<dt>${t('request.trip')}</dt><dd class="mono wrap">${invoice.tripId ?? '—'}</dd>
<dt>${t('request.paymentUrl')}</dt><dd class="mono wrap">${invoice.paymentUrl ?? '—'}</dd>
<dt>${t('request.gatewayReference')}</dt><dd class="mono wrap">${invoice.gatewayReference ?? '—'}</dd>
<dt>${t('request.paidAt')}</dt><dd>${invoice.paidAt ? locale.time(invoice.paidAt) : '—'}</dd>
</dl></section>
${sentOrUpcoming}
</div>
<h2>${t('request.attempts')}</h2>
${waiting && html`<p class="flash warning" data-refresh-seconds="2">${t('request.waiting')}</p>`}
${
  deliveries.length === 0
    ? html`<p class="muted">${t('request.noAttempts')}</p>`
    : html`<ol class="timeline">${deliveries.map((delivery) => attemptEntry(locale, delivery))}</ol>`
}
<h2>${t('request.callbacks')}</h2>
${callbackTable(locale, callbacks.rows, t('request.noCallbacks'))}`;
      return sendPage(reply, page(view, 'requests', t('request.heading', { id: invoice.id.slice(0, 8) }), content));
    },
  );

  app.post(
    '/payment-requests/:invoice_id/resend',
    { schema: { hide, params: Type.Object({ invoice_id: Type.String() }) }, config: { portalWrite: true } },
    async (request, reply) => {
      const invoiceId = request.params.invoice_id;
      if (!isUuid(invoiceId)) throw notFound('Payment request');
      await resendPaymentRequest(db, paymentQueue, invoiceId, scopeOf(request));
      return reply.redirect(`${requestPath(invoiceId)}?notice=request.resent`, 303);
    },
  );
};
