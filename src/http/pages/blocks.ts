// Building blocks the console's and the portal's pages repeat.
import { type Html, html } from './html.js';

/** A table, or a line saying there is nothing, inside a scroller for narrow screens. */
export function table(headers: string[], rows: Html[], empty: string): Html {
  if (rows.length === 0) return html`<p class="muted">${empty}</p>`;
  return html`<div class="scroll"><table><thead><tr>${headers.map((header) => html`<th>${header}</th>`)}</tr></thead><tbody>${rows}</tbody></table></div>`;
}

export const badge = (text: string, kind: string) => html`<span class="badge ${kind}">${text}</span>`;
