// A signed POST to a payment endpoint (src/payments/delivery/send.ts): its two deadlines (an
// endpoint that takes the connection but never finishes its answer, and one that never takes the
// connection, each end the attempt as a timeout that names its deadline), its TLS, and the
// connections it keeps for the endpoint's next requests.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { REQUEST_TIMEOUT_MS, sendSignedMessage } from '../../../src/payments/delivery/send.js';
import { selfSignedCertificate } from '../../support/certificate.js';

const SECRET = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;
const sendTo = (url: string, connectTimeoutMs?: number) =>
  sendSignedMessage(
    { openSecret: (sealed) => sealed, allowPrivateEndpoints: true, connectTimeoutMs },
    { url, sealedSecrets: [SECRET] },
    'msg_deadline',
    '{}',
    'test',
  );

/**
 * A listening socket that never accepts: a process that listens with the smallest backlog and then
 * blocks its event loop. Once the kernel's queue of connections waiting to be accepted is full,
 * a new connection is never completed.
 */
async function unacceptingPort(): Promise<{ port: number; child: ChildProcess; fillers: net.Socket[] }> {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const server = require('node:net').createServer();
       server.listen({ host: '127.0.0.1', port: 0, backlog: 1 }, () => {
         process.stdout.write(String(server.address().port) + '\\n', () =>
           Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0));
       });`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const [line] = (await once(child.stdout!, 'data')) as [Buffer];
  const port = Number(line.toString().trim());
  // More connections than the backlog holds: those beyond it stay half-open.
  const fillers = Array.from({ length: 4 }, () => net.connect(port, '127.0.0.1').on('error', () => {}));
  return { port, child, fillers };
}

describe('a signed POST to a payment endpoint', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const cleanup of cleanups.splice(0)) cleanup();
  });

  it('ends as a timeout when no connection is made within the connect deadline', async () => {
    const { port, child, fillers } = await unacceptingPort();
    cleanups.push(() => {
      for (const filler of fillers) filler.destroy();
      child.kill('SIGKILL');
    });
    const exchange = await sendTo(`http://127.0.0.1:${port}/payments`, 300);
    expect(exchange).toMatchObject({ outcome: 'network_error', error: 'TimeoutError: no connection within 0.3 s' });
    expect(exchange.outcome === 'network_error' && exchange.latencyMs).toBeGreaterThanOrEqual(290);
  });

  it(
    'ends as a timeout when the answer is not complete within its deadline, though it has begun',
    async () => {
      const endless = http.createServer((request, response) => {
        request.resume();
        request.on('end', () => {
          response.writeHead(200, { 'content-type': 'application/json' });
          response.write('{"payment_url":');
        });
      });
      endless.listen(0, '127.0.0.1');
      await once(endless, 'listening');
      cleanups.push(() => {
        endless.closeAllConnections();
        endless.close();
      });
      const exchange = await sendTo(`http://127.0.0.1:${(endless.address() as AddressInfo).port}/payments`);
      expect(exchange).toMatchObject({
        outcome: 'network_error',
        error: `TimeoutError: no complete answer within ${REQUEST_TIMEOUT_MS / 1000} s`,
      });
      expect(exchange.outcome === 'network_error' && exchange.latencyMs).toBeGreaterThanOrEqual(
        REQUEST_TIMEOUT_MS - 10,
      );
    },
    REQUEST_TIMEOUT_MS + 15_000,
  );

  it("checks an https endpoint's certificate, naming its host by SNI", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'endpoint-tls-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const files = selfSignedCertificate(dir, ['localhost']);
    const credentials = { key: readFileSync(files.key), cert: readFileSync(files.cert) };
    const named: string[] = [];
    const endpoint = https.createServer({
      ...credentials,
      SNICallback: (name, done) => {
        named.push(name);
        done(null, tls.createSecureContext(credentials));
      },
    });
    endpoint.on('tlsClientError', () => {});
    endpoint.listen(0);
    await once(endpoint, 'listening');
    cleanups.push(() => endpoint.close());
    const exchange = await sendTo(`https://localhost:${(endpoint.address() as AddressInfo).port}/payments`);
    // Signed by nobody the service trusts: refused before anything is sent.
    expect(exchange).toMatchObject({
      outcome: 'network_error',
      error: expect.stringMatching(/^DEPTH_ZERO_SELF_SIGNED_CERT: /),
    });
    expect(named).toEqual(['localhost']);
  });

  /**
   * An endpoint that answers 200, counting its connections and the requests it got, and drops the
   * connection of the requests `drops` picks (by their number on their connection, from 1) unanswered.
   */
  async function countingEndpoint(drops: (nthOnConnection: number) => boolean) {
    const seen = { connections: 0, requests: 0 };
    const endpoint = http.createServer((request, response) => {
      seen.requests += 1;
      const socket = request.socket as net.Socket & { served?: number };
      socket.served = (socket.served ?? 0) + 1;
      if (drops(socket.served)) {
        socket.destroy();
        return;
      }
      request.resume();
      request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    });
    endpoint.on('connection', () => (seen.connections += 1));
    endpoint.listen(0, '127.0.0.1');
    await once(endpoint, 'listening');
    cleanups.push(() => {
      endpoint.closeAllConnections();
      endpoint.close();
    });
    return { url: `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/payments`, seen };
  }

  it("keeps its connection for the endpoint's next request", async () => {
    const { url, seen } = await countingEndpoint(() => false);
    for (let sent = 0; sent < 3; sent++) {
      expect(await sendTo(url)).toMatchObject({ outcome: 'answered', reply: { status: 200 } });
    }
    expect(seen).toEqual({ connections: 1, requests: 3 });
  });

  it('sends once more, on a new connection, when the endpoint closes a kept one unanswered', async () => {
    // Each connection's second request finds it closed, as when an idle timeout strikes as it leaves.
    const { url, seen } = await countingEndpoint((nth) => nth === 2);
    expect(await sendTo(url)).toMatchObject({ outcome: 'answered', reply: { status: 200 } });
    expect(await sendTo(url)).toMatchObject({ outcome: 'answered', reply: { status: 200 } });
    expect(seen).toEqual({ connections: 2, requests: 3 });
  });

  it('does not send again when a new connection is closed unanswered', async () => {
    const { url, seen } = await countingEndpoint(() => true);
    expect(await sendTo(url)).toMatchObject({
      outcome: 'network_error',
      error: expect.stringMatching(/^ECONNRESET: /),
    });
    expect(seen).toEqual({ connections: 1, requests: 1 });
  });
});
