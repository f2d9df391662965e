// The console's pages are written with the shared HTML tag (src/http/pages/html.ts); timestamps
// for operators are UTC.
import { type Html, html } from '../../pages/html.js';

export { escapeHtml, Html, html } from '../../pages/html.js';

/** A timestamp for people: UTC, to the second, in a `<time>` element. */
export function when(value: Date | string | null | undefined): Html {
  if (!value) return html`<span class="muted">never</span>`;
  const iso = typeof value === 'string' ? value : value.toISOString();
  return html`<time datetime="${iso}">${iso.slice(0, 19).replace('T', ' ')} UTC</time>`;
}
