// The ceiling of payment request delivery: a bare Node script POSTing the same signed bodies to the
// same partner endpoint the service's worker sends to, `concurrency` at once, on kept connections
// (as the worker does) or, with `new-connections`, a new connection each (as the worker did before
// it kept its connections: the ceiling of earlier runs, for comparison). No database, no queue.
// Prints when each request was sent (epoch ms), and the CPU time the whole machine was busy while
// they were.
//   bare-sender.ts <requests.json> <concurrency> [kept-connections|new-connections]
//   requests.json: [{ url, headers, body }]

import { readFileSync } from 'node:fs';
import http from 'node:http';
import { machineBusySeconds } from './lib.js';

const requests = JSON.parse(readFileSync(process.argv[2], 'utf8')) as {
  url: string;
  headers: Record<string, string>;
  body: string;
}[];
const concurrency = Number(process.argv[3]);
// `false`: Node's plain way to send on a connection of the request's own.
const agent = process.argv[4] === 'new-connections' ? false : new http.Agent({ keepAlive: true });
const now = () => performance.timeOrigin + performance.now();

function post(request: (typeof requests)[number]): Promise<void> {
  return new Promise((resolve, reject) => {
    const outgoing = http.request(request.url, {
      method: 'POST',
      headers: {
        ...request.headers,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(request.body),
      },
      agent,
    });
    outgoing.on('error', reject);
    outgoing.on('response', (response) => {
      response.resume();
      response.on('end', resolve);
    });
    outgoing.end(request.body);
  });
}

const sentAt: Record<string, number> = {};
let next = 0;
const busyAtStart = machineBusySeconds();
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (next < requests.length) {
      const request = requests[next++];
      sentAt[request.headers['webhook-id']] = now();
      await post(request);
    }
  }),
);
process.stdout.write(JSON.stringify({ sentAt, machineBusySeconds: machineBusySeconds() - busyAtStart }));
