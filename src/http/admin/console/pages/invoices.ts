// Invoices: a filtered, paged list, newest first; a search by invoice or transaction id; an
// invoice's page as one timeline from creation through every payment request attempt and every
// notification, accepted or refused, to its trip's status, and the "send the payment request
// again" action. Test invoices carry a "test" badge everywhere, possible double charges a
// "possible double charge" badge, and the list filters them.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  INVOICE_STATUSES,
  type InvoiceListing,
  invoiceHistory,
  listInvoices,
  NOT_APPLIED_NOTES,
  type NotAppliedReason,
  type PaymentDeliveryRow,
  type PaymentEventRow,
  type RefusedNotificationRow,
  requestSent,
  resendPaymentRequest,
  searchInvoices,
  storedNotAppliedReason,
} from '../../../../payments/index.js';
import { listTenants } from '../../../../tenants/index.js';
import { prettyPayload } from '../../../pages/payload.js';
import { IdParams } from '../../../schemas.js';
import { type Html, html, when } from '../html.js';
import { badge, consoleUrl, page, pager, postForm, table, type View } from '../layout.js';
import { answer, type ConsoleDependencies, sendPage } from '../respond.js';

export { prettyPayload } from '../../../pages/payload.js';

const PAGE_SIZE = 50;
const STATUS_KIND: Record<string, string> = { pending: 'wait', failed: 'bad', paid: 'ok', refunded: 'off' };
const statusBadge = (status: string) => badge(status, STATUS_KIND[status] ?? 'off');
/** Marks a test invoice (made with test credentials); nothing for a live one. */
export const modeBadge = (mode: string) => mode === 'test' && badge('test', 'test');
/** Why a stored notification did not move its invoice; a possible double charge stands out. */
export const notAppliedBadge = (reason: NotAppliedReason) =>
  badge(NOT_APPLIED_NOTES[reason], reason === 'possible_double_charge' ? 'bad' : 'off');
/** Marks an invoice a second `paid` under another transaction_id came for; nothing otherwise. */
const doubleChargeBadge = (flagged: boolean) => flagged && badge('possible double charge', 'bad');

const DateText = Type.Optional(Type.Union([Type.Literal(''), Type.String({ format: 'date' })]));
const InvoiceQuery = Type.Object({
  tenant: Type.Optional(Type.Union([Type.Literal(''), Type.String({ format: 'uuid' })])),
  status: Type.Optional(Type.Union([Type.Literal(''), ...INVOICE_STATUSES.map((status) => Type.Literal(status))])),
  mode: Type.Optional(Type.Union([Type.Literal(''), Type.Literal('live'), Type.Literal('test')])),
  flag: Type.Optional(Type.Union([Type.Literal(''), Type.Literal('possible_double_charge')])),
  from: DateText,
  to: DateText,
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
});

const DAY_MS = 86_400_000;

/** What an attempt sent, as recorded. */
function requestSentView(delivery: PaymentDeliveryRow): Html {
  const sent = requestSent(delivery);
  if (sent === null) {
    return html`<p class="muted">No request recorded: nothing was sent (see the error), or the attempt was made before requests were kept.</p>`;
  }
  return html`<details class="sent"><summary>Request sent</summary><dl>
<dt>POST</dt><dd class="mono wrap">${sent.url}</dd>
<dt>webhook-id</dt><dd class="mono">${sent.webhookId}</dd>
<dt>webhook-timestamp</dt><dd class="mono">${sent.webhookTimestamp} (${when(new Date(sent.webhookTimestamp * 1000))})</dd>
<dt>webhook-signature</dt><dd class="mono">v1,… <span class="muted">(one per active secret, not kept)</span></dd>
</dl><p class="hint">Body as signed and sent:</p><pre class="payload">${sent.body}</pre></details>`;
}

function attemptEntry(delivery: PaymentDeliveryRow): Html {
  const outcome =
    delivery.error === null
      ? badge('delivered', 'ok')
      : delivery.nextRetryAt
        ? badge('will retry', 'wait')
        : badge('failed', 'bad');
  return html`<li class="event attempt"><div class="when">${when(delivery.attemptedAt)}</div><div class="what">
<h3>Payment request, attempt ${delivery.attempt} ${outcome}</h3>
<dl class="inline"><dt>HTTP status</dt><dd>${delivery.httpStatus ?? 'no answer'}</dd><dt>Latency</dt><dd>${
    delivery.latencyMs === null ? '—' : `${delivery.latencyMs} ms`
  }</dd>${delivery.nextRetryAt && html`<dt>Next retry</dt><dd>${when(delivery.nextRetryAt)}</dd>`}</dl>
${delivery.error && html`<p class="error-text">${delivery.error}</p>`}
<div class="columns">${requestSentView(delivery)}${delivery.responseBody && html`<details class="reply"><summary>Reply body (start)</summary><pre>${delivery.responseBody}</pre></details>`}</div>
</div></li>`;
}

function notificationEntry({ event, payloadJson }: { event: PaymentEventRow; payloadJson: string }): Html {
  const notApplied = storedNotAppliedReason(event);
  const outcome = notApplied === null ? badge('applied', 'ok') : notAppliedBadge(notApplied);
  return html`<li class="event notification"><div class="when">${when(event.receivedAt)}</div><div class="what">
<h3>Payment notification: ${event.status} ${outcome}</h3>
<dl class="inline"><dt>Invoice</dt><dd>${event.statusBefore} → ${event.statusAfter}</dd><dt>Transaction</dt><dd class="mono">${event.transactionId}</dd><dt>Gateway</dt><dd>${event.gateway}</dd><dt>Request id</dt><dd class="mono">${event.requestId ?? '—'}</dd></dl>
<details open><summary>Payload as received</summary><pre class="payload">${prettyPayload(payloadJson)}</pre></details>
</div></li>`;
}

function refusedEntry(refused: RefusedNotificationRow): Html {
  return html`<li class="event refused"><div class="when">${when(refused.receivedAt)}</div><div class="what">
<h3>Payment notification refused: ${refused.error} ${badge(`HTTP ${refused.httpStatus}`, 'bad')}</h3>
<dl class="inline"><dt>Request id</dt><dd class="mono">${refused.requestId ?? '—'}</dd></dl>
${refused.payload !== null && html`<details><summary>Payload as received${refused.payloadTruncated ? ' (cut short)' : ''}</summary><pre class="payload">${prettyPayload(refused.payload)}</pre></details>`}
</div></li>`;
}

/** Invoices as rows linking to their timelines. */
export function invoiceTable(invoices: InvoiceListing['invoices'], empty: string): Html {
  const rows = invoices.map(
    (invoice) =>
      html`<tr><td><a href="${consoleUrl(`/invoices/${invoice.id}`)}">${when(invoice.createdAt)}</a></td><td>${invoice.tenantName}</td><td class="num">${invoice.amount} ${invoice.currency}</td><td>${statusBadge(invoice.status)} ${modeBadge(invoice.mode)} ${doubleChargeBadge(invoice.possibleDoubleCharge)}</td><td class="mono">${invoice.id.slice(0, 8)}</td></tr>`,
  );
  return table(['Created', 'Tenant', 'Amount', 'Status', 'Id'], rows, empty);
}

type History = Awaited<ReturnType<typeof invoiceHistory>>;

function timeline(view: View, history: History): Html {
  const { invoice, tenant, trip } = history;
  const dated: [Date, Html][] = [
    ...history.deliveries.map((delivery): [Date, Html] => [delivery.attemptedAt, attemptEntry(delivery)]),
    ...history.events.map((received): [Date, Html] => [received.event.receivedAt, notificationEntry(received)]),
    ...history.refused.map((refused): [Date, Html] => [refused.receivedAt, refusedEntry(refused)]),
  ].sort((a, b) => a[0].getTime() - b[0].getTime());
  const resend =
    invoice.status === 'pending'
      ? postForm(
          view,
          `/invoices/${invoice.id}/payment-requests`,
          html`<button>Send the payment request again</button>`,
          {
            confirm: 'Send the payment request to the partner again now?',
            className: 'inline',
          },
        )
      : html`<span class="muted">The partner reported an outcome: the payment request is not sent again.</span>`;
  return html`<div class="toolbar">${statusBadge(invoice.status)} ${modeBadge(invoice.mode)} ${doubleChargeBadge(invoice.possibleDoubleCharge)} <strong>${invoice.amount} ${invoice.currency}</strong> <span>for <a href="${consoleUrl(`/tenants/${tenant.id}`)}">${tenant.name}</a></span> ${resend}</div>
${invoice.paymentUrl && html`<p>Payment URL from the partner: <span class="mono wrap">${invoice.paymentUrl}</span></p>`}
<ol class="timeline">
<li class="event created"><div class="when">${when(invoice.createdAt)}</div><div class="what"><h3>Invoice created</h3><dl class="inline"><dt>Id</dt><dd class="mono">${invoice.id}</dd><dt>Gateway</dt><dd>${tenant.gateway}</dd></dl></div></li>
${dated.length === 0 && html`<li class="event"><div class="when"></div><div class="what muted">No attempt recorded yet: the payment request is queued.</div></li>`}
${dated.map(([, entry]) => entry)}
${
  trip
    ? html`<li class="event trip"><div class="when">now</div><div class="what"><h3>Trip ${trip.title}: ${trip.status}</h3><p class="mono">${trip.id}</p></div></li>`
    : html`<li class="event trip"><div class="when">now</div><div class="what muted">No trip attached.</div></li>`
}
</ol>`;
}

function searchForm(term: string): Html {
  return html`<form method="get" action="${consoleUrl('/invoices/search')}" class="filters" role="search">
<label>Invoice or transaction id <input type="search" name="q" value="${term}" maxlength="255" placeholder="3f1c2b9e-… or chg_…"></label>
<button>Find</button></form>`;
}

export const invoiceRoutes: FastifyPluginAsyncTypebox<ConsoleDependencies> = async (app, { context }) => {
  const { db, paymentQueue } = context;
  const hide = true;

  app.get('/invoices', { schema: { hide, querystring: InvoiceQuery } }, async (request, reply) => {
    const query = request.query;
    const pageNumber = query.page ?? 1;
    const [tenants, listing] = [
      await listTenants(db),
      await listInvoices(db, {
        tenantId: query.tenant || undefined,
        status: query.status || undefined,
        mode: query.mode || undefined,
        possibleDoubleCharge: query.flag === 'possible_double_charge' || undefined,
        from: query.from ? new Date(`${query.from}T00:00:00Z`) : undefined,
        to: query.to ? new Date(Date.parse(`${query.to}T00:00:00Z`) + DAY_MS) : undefined,
        limit: PAGE_SIZE,
        offset: (pageNumber - 1) * PAGE_SIZE,
      }),
    ];
    const tenantOptions = tenants.map(
      (tenant) =>
        html`<option value="${tenant.id}"${tenant.id === query.tenant ? html` selected` : ''}>${tenant.name}</option>`,
    );
    const statusOptions = INVOICE_STATUSES.map(
      (status) => html`<option${status === query.status ? html` selected` : ''}>${status}</option>`,
    );
    const modeOptions = ['live', 'test'].map(
      (mode) => html`<option${mode === query.mode ? html` selected` : ''}>${mode}</option>`,
    );
    const content = html`${searchForm('')}
<form method="get" class="filters">
<label>Tenant <select name="tenant" data-autosubmit><option value="">all</option>${tenantOptions}</select></label>
<label>Status <select name="status" data-autosubmit><option value="">all</option>${statusOptions}</select></label>
<label>Mode <select name="mode" data-autosubmit><option value="">all</option>${modeOptions}</select></label>
<label>Flag <select name="flag" data-autosubmit><option value="">any</option><option value="possible_double_charge"${query.flag === 'possible_double_charge' ? html` selected` : ''}>possible double charge</option></select></label>
<label>From <input type="date" name="from" value="${query.from ?? ''}"></label>
<label>To <input type="date" name="to" value="${query.to ?? ''}"></label>
<button>Filter</button></form>
${invoiceTable(listing.invoices, 'No invoice matches.')}
${pager('/invoices', { tenant: query.tenant, status: query.status, mode: query.mode, flag: query.flag, from: query.from, to: query.to }, pageNumber, pageNumber * PAGE_SIZE < listing.count)}`;
    return sendPage(reply, page(request.consoleView, 'invoices', 'Invoices', content));
  });

  app.get(
    '/invoices/search',
    { schema: { hide, querystring: Type.Object({ q: Type.Optional(Type.String({ maxLength: 255 })) }) } },
    async (request, reply) => {
      const term = request.query.q ?? '';
      const found = await searchInvoices(db, term);
      const content = html`${searchForm(term)}
${term.trim() === '' ? html`<p class="muted">Enter an invoice id or a transaction id.</p>` : invoiceTable(found, `No invoice has the id or a transaction "${term.trim()}".`)}`;
      return sendPage(reply, page(request.consoleView, 'invoices', 'Find an invoice', content));
    },
  );

  app.get('/invoices/:id', { schema: { hide, params: IdParams } }, async (request, reply) => {
    const history = await invoiceHistory(db, request.params.id);
    const view = request.consoleView;
    return sendPage(
      reply,
      page(view, 'invoices', `Invoice ${history.invoice.id.slice(0, 8)}`, timeline(view, history)),
    );
  });

  app.post('/invoices/:id/payment-requests', { schema: { hide, params: IdParams } }, async (request, reply) => {
    const attempt = await resendPaymentRequest(db, paymentQueue, request.params.id);
    return answer(reply, {
      redirect: `/invoices/${request.params.id}`,
      notice: `Attempt ${attempt} of the payment request queued: it appears here once made (reload).`,
    });
  });
};
