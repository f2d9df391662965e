// Human-readable tables by default, JSON with --json.
export type Row = Record<string, unknown>;

function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (Array.isArray(value)) return value.map(cell).join(',');
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

export function table(rows: Row[], columns: string[]): string {
  const cells = rows.map((row) => columns.map((column) => cell(row[column])));
  const widths = columns.map((column, i) => Math.max(column.length, ...cells.map((line) => line[i].length)));
  const format = (line: string[]) =>
    line
      .map((text, i) => text.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  return [format(columns.map((column) => column.toUpperCase())), ...cells.map(format)].join('\n');
}

/** A record as `key: value` lines. */
export function record(row: Row): string {
  const width = Math.max(...Object.keys(row).map((key) => key.length));
  return Object.entries(row)
    .map(([key, value]) => `${key.padEnd(width)}  ${cell(value)}`)
    .join('\n');
}

/** A paged admin list (`{count, next, previous, results}`) as a table and how much of it is shown. */
export function pageText(page: { results: Row[]; count: number; next: string | null }, columns: string[]): string {
  const footer = `${page.results.length} of ${page.count}${page.next ? ' (more with --offset)' : ''}`;
  return `${table(page.results, columns)}\n${footer}`;
}
