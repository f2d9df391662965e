// Building blocks the console's and the portal's pages repeat.
import { type Html, html } from '../html.js';

/** A table, or a line saying there is nothing, inside a scroller for narrow screens. */
export function table(headers: string[], rows: Html[], empty: string): Html {
  if (rows.length === 0) return html`<p class="muted">${empty}</p>`;
  return html`<div class="scroll"><table><thead><tr>${headers.map((header) => html`<th>${header}</th>`)}</tr></thead><tbody>${rows}</tbody></table></div>`;
}

/**
 * A table whose rows become cards on a phone: each cell under its header's name (`data-label`),
 * so nothing important sits past the screen's edge.
 */
export function cardTable(headers: string[], rows: Html[][], empty: string, numeric: number[] = []): Html {
  if (rows.length === 0) return html`<p class="muted">${empty}</p>`;
  const numericClass = (i: number) => numeric.includes(i) && html` class="num"`;
  return html`<div class="scroll"><table class="cards"><thead><tr>${headers.map(
    (header, i) => html`<th${numericClass(i)}>${header}</th>`,
  )}</tr></thead><tbody>${rows.map(
    (cells) =>
      html`<tr>${cells.map((cell, i) => html`<td data-label="${headers[i]}"${numericClass(i)}>${cell}</td>`)}</tr>`,
  )}</tbody></table></div>`;
}

export const badge = (text: string, kind: string) => html`<span class="badge ${kind}">${text}</span>`;
