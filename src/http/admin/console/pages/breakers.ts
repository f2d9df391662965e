// The circuit breakers of payment endpoints on the console: a tenant's on its page, with its
// history, and the failing ones on the home page.
import type { BreakerEventRow, BreakerRow } from '../../../../payments/index.js';
import { type Html, html, when } from '../html.js';
import { badge, consoleUrl, table } from '../layout.js';

const STATE_BADGES: Record<string, Html> = {
  closed: badge('closed: requests flow', 'ok'),
  open: badge('open: requests wait for a probe', 'bad'),
  half_open: badge('half-open: probe under way', 'wait'),
};

const EVENT_LABELS: Record<string, string> = {
  opened: 'opened',
  probe_failed: 'probe failed',
  closed: 'closed',
};

/** The tenant page's card: the breaker's state, next probe, last error, and its history. */
export function breakerCard(breaker: BreakerRow | null, history: BreakerEventRow[]): Html {
  const state = breaker?.state ?? 'closed';
  const failing = state !== 'closed';
  const rows = history.map(
    (event) =>
      html`<tr><td>${when(event.at)}</td><td>${EVENT_LABELS[event.event] ?? event.event}</td><td>${event.consecutiveFailures}</td><td class="wrap">${event.error ?? ''}</td></tr>`,
  );
  return html`<section class="card"><h2>Payment endpoint breaker</h2><dl>
<dt>State</dt><dd>${STATE_BADGES[state] ?? state}</dd>
<dt>Failures in a row</dt><dd>${breaker?.consecutiveFailures ?? 0}</dd>
${failing ? html`<dt>Next probe</dt><dd>${when(breaker?.probeAt)}</dd>` : ''}
${breaker?.lastError ? html`<dt>Last error</dt><dd class="wrap">${breaker.lastError}</dd>` : ''}
</dl>
${table(['When', 'Event', 'Failures in a row', 'Error'], rows, 'Never opened.')}</section>`;
}

/** The home page's list of endpoints whose breaker is not closed; nothing when none. */
export function failingEndpointsCard(failing: (BreakerRow & { tenantName: string })[]): Html {
  if (failing.length === 0) return html``;
  const rows = failing.map(
    (row) =>
      html`<tr><td><a href="${consoleUrl(`/tenants/${row.tenantId}`)}">${row.tenantName}</a></td><td>${STATE_BADGES[row.state] ?? row.state}</td><td>${when(row.changedAt)}</td><td>${when(row.probeAt)}</td><td class="wrap">${row.lastError ?? ''}</td></tr>`,
  );
  return html`<h2>Failing payment endpoints</h2>
${table(['Tenant', 'Breaker', 'Since', 'Next probe', 'Last error'], rows, '')}`;
}
