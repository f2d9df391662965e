// The alert rules and the Grafana dashboard shipped in deploy/: every series they read is one the
// service exports (checked against a real scrape of /metrics), and the rules pass promtool's check
// and unit tests (deploy/prometheus/alerts.test.yml) when promtool is installed (CI installs it).
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/paths.js';
import { parsePrometheus, type Scrape } from '../support/prometheus.js';
import { useService } from '../support/service.js';

const PROMETHEUS_DIR = path.join(projectRoot, 'deploy/prometheus');
const DASHBOARD = path.join(projectRoot, 'deploy/grafana/partner-integrations.json');
/** Series Prometheus makes itself, not the service. */
const PROMETHEUS_SERIES = new Set(['up']);
const PROMQL_WORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
]);
const HISTOGRAM_SUFFIX = /_(bucket|count|sum)$/;

const promtool = spawnSync('promtool', ['--version']).status === 0;

/** The series an expression reads: names outside strings, matchers, ranges and groupings, not called. */
function seriesOf(expression: string): string[] {
  const bare = expression
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, ' ');
  const names = [...bare.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\()?/g)]
    .filter((match) => !match[2] && !PROMQL_WORDS.has(match[1]))
    .map((match) => match[1]);
  return [...new Set(names)];
}

function exported(scrape: Scrape, name: string): boolean {
  if (scrape.types.has(name)) return true;
  const base = name.replace(HISTOGRAM_SUFFIX, '');
  return base !== name && ['histogram', 'summary'].includes(scrape.types.get(base) ?? '');
}

function ruleExpressions(): string[] {
  const text = readFileSync(path.join(PROMETHEUS_DIR, 'alerts.yml'), 'utf8');
  // The rules file's `expr:` values, one line or a `|` block (no YAML parser among our dependencies).
  const expressions: string[] = [];
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    const match = /^(\s*)expr:\s*(.*)$/.exec(line);
    if (!match) return;
    if (match[2] !== '|') {
      expressions.push(match[2]);
      return;
    }
    const block: string[] = [];
    for (let j = i + 1; j < lines.length && (lines[j].trim() === '' || lines[j].search(/\S/) > match[1].length); j++) {
      block.push(lines[j].trim());
    }
    expressions.push(block.join(' '));
  });
  return expressions;
}

const service = useService();
let scrape: Scrape;
beforeAll(async () => {
  // Some traffic, so that labelled series have samples too.
  await fetch(`${service.urls.integrations}/api/v1/countries/`);
  const response = await fetch(`${service.urls.admin}/metrics`);
  const text = await response.text();
  expect(response.status, text).toBe(200);
  scrape = parsePrometheus(text);
});

describe('monitoring shipped in deploy/', () => {
  it('reads series names the way PromQL does', () => {
    expect(
      seriesOf(
        'sum by (listener, le) (rate(a_total{x="b{c}", y=~"5.."}[5m])) / on (z) max(b_seconds) > 0.05 and c == bool 1',
      ),
    ).toEqual(['a_total', 'b_seconds', 'c']);
  });

  it('alert rules read only series the service exports', () => {
    const expressions = ruleExpressions();
    expect(expressions.length).toBeGreaterThanOrEqual(9);
    for (const expression of expressions) {
      const names = seriesOf(expression);
      expect(names.length, expression).toBeGreaterThan(0);
      for (const name of names) {
        expect(PROMETHEUS_SERIES.has(name) || exported(scrape, name), `${name} in ${expression}`).toBe(true);
      }
    }
  });

  it('every dashboard query names series the service exports', () => {
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8'));
    const queries: string[] = dashboard.panels.flatMap((panel: { targets: { expr: string }[] }) =>
      panel.targets.map((target) => target.expr),
    );
    expect(queries.length).toBeGreaterThanOrEqual(12);
    for (const query of queries) {
      const names = seriesOf(query);
      expect(names.length, query).toBeGreaterThan(0);
      for (const name of names) {
        expect(PROMETHEUS_SERIES.has(name) || exported(scrape, name), `${name} in ${query}`).toBe(true);
      }
    }
  });

  it('exports the payment backlog per mode, which the alerts read live only', () => {
    for (const name of ['payment_requests_waiting', 'payment_requests_oldest_waiting_seconds']) {
      const modes = scrape.samples.filter((sample) => sample.name === name).map((sample) => sample.labels.mode);
      expect(modes.sort(), name).toEqual(['live', 'test']);
    }
    const backlogRules = ruleExpressions().filter((expression) => expression.includes('payment_requests_oldest'));
    expect(backlogRules.length).toBe(2);
    for (const expression of backlogRules) expect(expression).toContain('mode="live"');
  });

  it.skipIf(!promtool)('the rules pass promtool check rules and promtool test rules', () => {
    const options = { cwd: PROMETHEUS_DIR, encoding: 'utf8' as const };
    const checked = execFileSync('promtool', ['check', 'rules', 'alerts.yml'], options);
    expect(checked).toContain('SUCCESS');
    const tested = execFileSync('promtool', ['test', 'rules', 'alerts.test.yml'], options);
    console.info(`promtool check rules:\n${checked}promtool test rules:\n${tested}`);
    expect(tested).toContain('SUCCESS');
  });
});
