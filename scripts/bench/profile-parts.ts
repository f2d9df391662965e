// What each part of the service costs in a .cpuprofile kept by `npm run bench -- --profile`: self
// time by package or file, by function, and by part of the pipeline (each sample given to the
// innermost frame that is one of the markers below or one of our modules; a hook of ours calling
// Fastify's continuation leaves that work to Fastify).
//
//   tsx scripts/bench/profile-parts.ts <file.cpuprofile> [--from S] [--to S] [--us-per-request N]
//
// The profile covers the whole life of the service: --from and --to keep the samples of the load
// (seconds from its start; the activity per second is printed to find them). With the service's
// CPU µs per request, shares are also printed as µs. The profiler samples wall time: the socket
// write's share includes the time the process was preempted when it woke the client up.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const { values: options, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    from: { type: 'string', default: '0' },
    to: { type: 'string', default: 'Infinity' },
    'us-per-request': { type: 'string' },
  },
});
const profile = JSON.parse(readFileSync(positionals[0], 'utf8')) as Profile;
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const parents = new Map<number, ProfileNode>();
for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node);

/** A frame's package (node_modules), Node module, file of ours, or V8 pseudo-frame. */
function placeOf({ callFrame: { url, functionName } }: ProfileNode): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const dependency = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (dependency) return dependency[1];
  if (url.startsWith('node:')) return url;
  return url.replace(/^file:\/\/.*?\/(?:dist\/)?(src|test|scripts)\//, '$1/');
}

const nameOf = (node: ProfileNode) =>
  `${node.callFrame.functionName || '(anonymous)'} ${placeOf(node)}:${node.callFrame.lineNumber + 1}`;

/** Parts told apart however deep they are called: the syscall, Node's header block, the libraries of the pipeline. */
function markerOf(node: ProfileNode): string | null {
  const { functionName, url } = node.callFrame;
  if (functionName === 'writev' || functionName === 'writeBuffer') return 'socket write (syscall)';
  if ((functionName === '_storeHeader' || functionName === 'writeHead') && url.startsWith('node:'))
    return 'header block (Node writeHead)';
  if (url.includes('/prom-client/')) return 'metric (prom-client)';
  if (url.includes('/rate-limiter-flexible/')) return 'rate limit (rate-limiter-flexible)';
  if (url.includes('/pino')) return 'log line (pino)';
  if (placeOf(node).startsWith('src/')) return `ours: ${placeOf(node)}`;
  return null;
}

function partOf(leaf: ProfileNode): string {
  let callee: ProfileNode | undefined;
  for (let node: ProfileNode | undefined = leaf; node; node = parents.get(node.id)) {
    const marker = markerOf(node);
    const continuation =
      callee && placeOf(callee) === 'fastify' && !callee.callFrame.functionName.startsWith('Reply.header');
    if (marker?.startsWith('ours:') && continuation) break;
    if (marker) return marker;
    callee = node;
  }
  return `framework: ${placeOf(leaf)}`;
}

const from = Number(options.from) * 1e6;
const to = Number(options.to) * 1e6;
const bySecond = new Map<number, { busy: number; all: number }>();
const sums = { place: new Map<string, number>(), function: new Map<string, number>(), part: new Map<string, number>() };
let busy = 0;
let elapsed = 0;
for (let index = 0; index < profile.samples.length; index++) {
  elapsed += profile.timeDeltas[index];
  const weight = profile.timeDeltas[index + 1] ?? 0;
  const leaf = nodes.get(profile.samples[index]) as ProfileNode;
  const idle = leaf.callFrame.functionName === '(idle)';
  const second = Math.floor(elapsed / 1e6);
  const activity = bySecond.get(second) ?? { busy: 0, all: 0 };
  activity.all += weight;
  if (!idle) activity.busy += weight;
  bySecond.set(second, activity);
  if (idle || elapsed < from || elapsed > to) continue;
  busy += weight;
  const add = (sum: Map<string, number>, key: string) => sum.set(key, (sum.get(key) ?? 0) + weight);
  add(sums.place, placeOf(leaf));
  add(sums.function, nameOf(leaf));
  add(sums.part, partOf(leaf));
}

const usPerRequest = options['us-per-request'] ? Number(options['us-per-request']) : undefined;
const share = (time: number) => {
  const fraction = time / busy;
  const us = usPerRequest === undefined ? '' : ` ${(fraction * usPerRequest).toFixed(1).padStart(6)} µs`;
  return `${(100 * fraction).toFixed(1).padStart(5)}%${us}`;
};
const print = (title: string, sum: Map<string, number>, count: number) => {
  console.log(`\n## ${title}`);
  for (const [key, time] of [...sum].sort((a, b) => b[1] - a[1]).slice(0, count)) console.log(`${share(time)}  ${key}`);
};
console.log('## busy share by second since the start (to choose --from and --to)');
console.log([...bySecond].map(([second, { busy, all }]) => `${second}:${Math.round((100 * busy) / all)}%`).join(' '));
console.log(`\nbusy ${(busy / 1e6).toFixed(2)} s between ${options.from} s and ${options.to} s`);
print('by part of the pipeline', sums.part, 40);
print('self time by package or file', sums.place, 30);
print('self time by function', sums.function, 50);
