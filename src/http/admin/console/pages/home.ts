// The home page: the last day of payments as charts, and the numbers operators check first, of
// live traffic by default; the "Test mode" tab shows the same of test traffic, kept apart.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import {
  ATTEMPT_OUTCOMES,
  failingEndpoints,
  hourlyPaymentActivity,
  listInvoices,
  NOTIFICATION_OUTCOMES,
  possibleDoubleCharges,
} from '../../../../payments/index.js';
import { countActiveTenants, MODES, type Mode } from '../../../../tenants/index.js';
import { hourlyChart } from '../chart.js';
import { html } from '../html.js';
import { consoleUrl, page } from '../layout.js';
import { type ConsoleDependencies, sendPage } from '../respond.js';
import { failingEndpointsCard } from './breakers.js';
import { invoiceTable } from './invoices.js';

const LATEST_INVOICES = 8;

const seriesOf = <Outcome extends string>(outcomes: readonly Outcome[], counts: Record<Outcome, number[]>) =>
  outcomes.map((outcome) => ({ label: outcome, className: `c-${outcome.replace(' ', '-')}`, counts: counts[outcome] }));

const MODE_TABS: Record<Mode, string> = { live: 'Live', test: 'Test mode' };
const HomeQuery = Type.Object({ mode: Type.Optional(Type.Union([Type.Literal('live'), Type.Literal('test')])) });

const modeTabs = (current: Mode) =>
  html`<nav class="tabs">${MODES.map(
    (mode) =>
      html`<a href="${consoleUrl(mode === 'live' ? '/' : `/?mode=${mode}`)}"${mode === current ? html` aria-current="page"` : ''}>${MODE_TABS[mode]}</a>`,
  )}</nav>`;

export const homeRoutes: FastifyPluginAsyncTypebox<ConsoleDependencies> = async (app, { context }) => {
  app.get('/', { schema: { hide: true, querystring: HomeQuery } }, async (request, reply) => {
    const mode = request.query.mode ?? 'live';
    const [activity, activeTenants, backlogs, latest, failing, doubleCharges] = [
      await hourlyPaymentActivity(context.db, mode),
      await countActiveTenants(context.db),
      await context.paymentQueue.backlog(),
      await listInvoices(context.db, { mode, limit: LATEST_INVOICES, offset: 0 }),
      // Only live endpoints have a breaker.
      mode === 'live' ? await failingEndpoints(context.db) : [],
      await possibleDoubleCharges(context.db, mode),
    ];
    const backlog = backlogs[mode];
    const content = html`${modeTabs(mode)}
<div class="stats">
<a class="stat card" href="${consoleUrl('/tenants?active=active')}"><span class="value">${activeTenants}</span><span>tenants active</span></a>
<a class="stat card" href="${consoleUrl(`/invoices?status=pending&mode=${mode}`)}"><span class="value">${backlog.waiting}</span><span>payment requests waiting or pending retry</span></a>
<div class="stat card"><span class="value">${Math.round(backlog.oldestAgeSeconds / 60)} min</span><span>oldest waiting</span></div>
${mode === 'live' && html`<div class="stat card"><span class="value">${failing.length}</span><span>payment endpoints failing (breaker open)</span></div>`}
<a class="stat card" href="${consoleUrl(`/invoices?mode=${mode}&flag=possible_double_charge`)}"><span class="value">${doubleCharges}</span><span>possible double charges (a second paid, not applied)</span></a>
</div>
${failingEndpointsCard(failing)}
<div class="charts">
${hourlyChart(`Payment notifications per hour, last ${activity.notifications.hours.length} h (UTC), ${mode} invoices`, activity.notifications.hours, seriesOf(NOTIFICATION_OUTCOMES, activity.notifications.counts))}
${hourlyChart(`Payment request attempts per hour, last ${activity.attempts.hours.length} h (UTC), ${mode} invoices`, activity.attempts.hours, seriesOf(ATTEMPT_OUTCOMES, activity.attempts.counts))}
</div>
<h2>Latest invoices</h2>
${invoiceTable(latest.invoices, 'No invoice yet.')}
<p><a href="${consoleUrl(`/invoices?mode=${mode}`)}">All ${mode} invoices →</a></p>`;
    return sendPage(reply, page(request.consoleView, 'home', 'Overview', content));
  });
};
