// The home page: the last day of payments as charts, and the numbers operators check first.
import type { FastifyPluginAsync } from 'fastify';
import {
  ATTEMPT_OUTCOMES,
  failingEndpoints,
  hourlyPaymentActivity,
  listInvoices,
  NOTIFICATION_OUTCOMES,
  possibleDoubleCharges,
} from '../../../../payments/index.js';
import { countActiveTenants } from '../../../../tenants/index.js';
import { hourlyChart } from '../chart.js';
import { html } from '../html.js';
import { consoleUrl, page } from '../layout.js';
import { type ConsoleDependencies, sendPage } from '../respond.js';
import { failingEndpointsCard } from './breakers.js';
import { invoiceTable } from './invoices.js';

const LATEST_INVOICES = 8;

const seriesOf = <Outcome extends string>(outcomes: readonly Outcome[], counts: Record<Outcome, number[]>) =>
  outcomes.map((outcome) => ({ label: outcome, className: `c-${outcome.replace(' ', '-')}`, counts: counts[outcome] }));

export const homeRoutes: FastifyPluginAsync<ConsoleDependencies> = async (app, { context }) => {
  app.get('/', { schema: { hide: true } }, async (request, reply) => {
    const [activity, activeTenants, backlog, latest, failing, doubleCharges] = [
      await hourlyPaymentActivity(context.db),
      await countActiveTenants(context.db),
      await context.paymentQueue.backlog(),
      await listInvoices(context.db, { mode: 'live', limit: LATEST_INVOICES, offset: 0 }),
      await failingEndpoints(context.db),
      await possibleDoubleCharges(context.db, 'live'),
    ];
    const content = html`<div class="stats">
<a class="stat card" href="${consoleUrl('/tenants?active=active')}"><span class="value">${activeTenants}</span><span>tenants active</span></a>
<a class="stat card" href="${consoleUrl('/invoices?status=pending')}"><span class="value">${backlog.waiting}</span><span>payment requests waiting or pending retry</span></a>
<div class="stat card"><span class="value">${Math.round(backlog.oldestAgeSeconds / 60)} min</span><span>oldest waiting</span></div>
<div class="stat card"><span class="value">${failing.length}</span><span>payment endpoints failing (breaker open)</span></div>
<a class="stat card" href="${consoleUrl('/invoices?mode=live&flag=possible_double_charge')}"><span class="value">${doubleCharges}</span><span>possible double charges (a second paid, not applied)</span></a>
</div>
${failingEndpointsCard(failing)}
<div class="charts">
${hourlyChart('Payment notifications per hour, last 24 h (UTC)', activity.notifications.hours, seriesOf(NOTIFICATION_OUTCOMES, activity.notifications.counts))}
${hourlyChart('Payment request attempts per hour, last 24 h (UTC)', activity.attempts.hours, seriesOf(ATTEMPT_OUTCOMES, activity.attempts.counts))}
</div>
<h2>Latest invoices</h2>
${invoiceTable(latest.invoices, 'No invoice yet.')}
<p><a href="${consoleUrl('/invoices')}">All invoices →</a></p>`;
    return sendPage(reply, page(request.consoleView, 'home', 'Overview', content));
  });
};
