// The least a Node process can spend on a payment callback, as a second reference beside pgbench:
// node:http, JSON.parse, and the statement the service sends for one callback (notification-store.ts),
// through the service's own PostgreSQL handle (postgres.js, prepared, ten connections). Nothing else:
// no key, no checks, no lossless numbers, no log, no metric, Node's own headers only.
//   callback-floor.ts <port> <tenant id>   DATABASE_URL: the bench's database
import { createServer } from 'node:http';
import { openDatabase } from '../../src/db/client.js';
import { plannedMoves, RECEIVE_STATEMENT } from '../../src/payments/index.js';

const [port, tenantId] = process.argv.slice(2);
const database = await openDatabase({ databaseUrl: process.env.DATABASE_URL!, dataDir: '' });
const plans = JSON.stringify(plannedMoves('paid'));
// As many connections as the service's pool: one statement per callback, ten under way.
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
    const { invoice_id, transaction_id, status, amount, currency, gateway } = JSON.parse(body);
    const [row] = await connections.query<{ stored: boolean }>(RECEIVE_STATEMENT, [
      tenantId,
      invoice_id,
      transaction_id,
      status,
      gateway,
      true,
      amount,
      currency,
      plans,
      body,
      String(requests++),
      'live',
    ]);
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.end(row?.stored ? '{"status":"success"}' : '{"status":"duplicate"}');
  });
});
server.listen(Number(port), '127.0.0.1');
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => process.exit(0));
