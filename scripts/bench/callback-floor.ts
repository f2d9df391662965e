// The least a Node process can spend on a payment callback, as a second reference beside pgbench:
// node:http, JSON.parse, and the statements the service sends for one callback alone
// (notification-store.ts: the read, and for a new notification the store), through the service's
// own PostgreSQL handle (postgres.js, prepared, ten connections). Nothing else: no key, no checks,
// no lossless numbers, no log, no metric, Node's own headers only.
//   callback-floor.ts <port> <tenant id>   DATABASE_URL: the bench's database
import { createServer } from 'node:http';
import { openDatabase } from '../../src/db/client.js';
import { plannedMoves, READ_STATEMENT, STORE_STATEMENT } from '../../src/payments/index.js';

const [port, tenantId] = process.argv.slice(2);
const database = await openDatabase({ databaseUrl: process.env.DATABASE_URL!, dataDir: '' });
const moves = plannedMoves('paid');
// As many connections as the service's pool: one callback's statements per connection, ten under way.
const connections = database.dedicatedConnections(10);
let requests = 0;
const server = createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (chunk: string) => {
    body += chunk;
  });
  req.on('end', async () => {
    if (req.method !== 'POST') return void res.end('ok');
    const { invoice_id, transaction_id, status, gateway } = JSON.parse(body);
    const lookup = { item: 0, tenant: tenantId, invoice_id, mode: 'live', transaction_id, status, gateway };
    const [read] = await connections.run(READ_STATEMENT, [JSON.stringify([lookup])]);
    const notification = { ...lookup, moves, payload: body, request_id: String(requests++) };
    const [row] = !read || read.known ? [] : await connections.run(STORE_STATEMENT, [JSON.stringify([notification])]);
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.end(row?.stored ? '{"status":"success"}' : '{"status":"duplicate"}');
  });
});
server.listen(Number(port), '127.0.0.1');
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => process.exit(0));
