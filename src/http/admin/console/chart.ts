// Hourly stacked bar charts as inline SVG, drawn on the server: no script, no library, and the
// numbers stay readable as text (each bar's title, the legend's totals).
import { type Html, html } from './html.js';

export interface ChartSeries {
  label: string;
  /** A CSS class giving the colour (console.css). */
  className: string;
  counts: number[];
}

const WIDTH = 720;
const HEIGHT = 180;
const AXIS = 28;
const TOP = 10;

const hourLabel = (hour: Date) => `${String(hour.getUTCHours()).padStart(2, '0')}:00`;

export function hourlyChart(title: string, hours: Date[], series: ChartSeries[]): Html {
  const totals = hours.map((_, i) => series.reduce((sum, line) => sum + line.counts[i], 0));
  const peak = Math.max(1, ...totals);
  const plotHeight = HEIGHT - AXIS - TOP;
  const slot = (WIDTH - AXIS) / hours.length;
  const barWidth = Math.max(2, slot * 0.7);
  const bars = hours.map((hour, i) => {
    let y = HEIGHT - AXIS;
    const segments = series.map((line) => {
      const height = (line.counts[i] / peak) * plotHeight;
      y -= height;
      return line.counts[i] === 0
        ? ''
        : html`<rect class="${line.className}" x="${(AXIS + i * slot).toFixed(1)}" y="${y.toFixed(1)}" width="${barWidth.toFixed(1)}" height="${height.toFixed(1)}"><title>${hourLabel(hour)} UTC: ${line.counts[i]} ${line.label}</title></rect>`;
    });
    const tick =
      i % 6 === 0
        ? html`<text class="tick" x="${(AXIS + i * slot).toFixed(1)}" y="${HEIGHT - 10}">${hourLabel(hour)}</text>`
        : '';
    return html`${segments}${tick}`;
  });
  const legend = series.map(
    (line) =>
      html`<li><span class="swatch ${line.className}"></span>${line.label} <strong>${line.counts.reduce((a, b) => a + b, 0)}</strong></li>`,
  );
  const total = totals.reduce((a, b) => a + b, 0);
  return html`<figure class="chart card">
<figcaption>${title}</figcaption>
<svg viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${title}: ${total} in the last ${hours.length} hours">
<line class="axis" x1="${AXIS}" y1="${HEIGHT - AXIS}" x2="${WIDTH}" y2="${HEIGHT - AXIS}"></line>
<text class="tick" x="0" y="${TOP + 8}">${peak}</text><text class="tick" x="0" y="${HEIGHT - AXIS}">0</text>
${bars}
</svg>
<ul class="legend">${legend}</ul>
</figure>`;
}
