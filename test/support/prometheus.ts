// A strict reader of the Prometheus text exposition format (0.0.4): every line must be a comment
// (# HELP / # TYPE), blank, or a sample `name{label="value",...} number`; anything else throws.
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Scrape {
  samples: Sample[];
  types: Map<string, string>;
  /** The value of the one sample with this name and at least these labels (0 when there is none). */
  value(name: string, labels?: Record<string, string>): number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: -?\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/y;

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const match = LABEL.exec(text);
    if (!match) throw new Error(`bad labels in: ${line}`);
    labels[match[1]] = match[2].replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
  }
  return labels;
}

/** Go's ParseFloat, which Prometheus uses, reads NaN and Inf in any case (prom-client writes `Nan`). */
function parseValue(text: string, line: string): number {
  if (/^\+?inf$/i.test(text)) return Number.POSITIVE_INFINITY;
  if (/^-inf$/i.test(text)) return Number.NEGATIVE_INFINITY;
  if (/^nan$/i.test(text)) return Number.NaN;
  const value = Number(text);
  if (text === '' || Number.isNaN(value)) throw new Error(`bad value in: ${line}`);
  return value;
}

export function parsePrometheus(text: string): Scrape {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      const comment = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
      if (!comment) throw new Error(`bad comment: ${line}`);
      if (comment[1] === 'TYPE') {
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(comment[3])) {
          throw new Error(`bad type: ${line}`);
        }
        types.set(comment[2], comment[3]);
      }
      continue;
    }
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`bad sample: ${line}`);
    samples.push({ name: match[1], labels: parseLabels(match[2] ?? '', line), value: parseValue(match[3], line) });
  }
  return {
    samples,
    types,
    value(name, labels = {}) {
      const found = samples.filter(
        (sample) =>
          sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
      );
      if (found.length > 1) throw new Error(`${found.length} samples match ${name} ${JSON.stringify(labels)}`);
      return found[0]?.value ?? 0;
    },
  };
}
