// The console's HTML: the shared auto-escaping tag (src/http/html.ts) and what only the console shows.
import { type Html, html } from '../../html.js';

export { Html, html } from '../../html.js';

/** A timestamp for people: UTC, to the second, in a `<time>` element. */
export function when(value: Date | string | null | undefined): Html {
  if (!value) return html`<span class="muted">never</span>`;
  const iso = typeof value === 'string' ? value : value.toISOString();
  return html`<time datetime="${iso}">${iso.slice(0, 19).replace('T', ' ')} UTC</time>`;
}
