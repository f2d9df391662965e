// Slow and idle clients: partial headers are cut off after HEADERS_TIMEOUT_SECONDS while others are
// served, and connections past MAX_CONNECTIONS are closed at once.
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { useService } from '../support/service.js';

/** How long a test waits for the server to close a connection before calling it never closed. */
const CLOSE_DEADLINE_MS = 5000;

/**
 * A raw connection to a listener's base URL, and when the server closed it (null: not within the
 * deadline), so a failure is an assertion rather than a hung test.
 */
async function openSocket(baseUrl: string): Promise<{ socket: Socket; closed: Promise<number | null> }> {
  const { hostname, port } = new URL(baseUrl);
  const socket = connect({ host: hostname, port: Number(port) });
  socket.on('error', () => {});
  socket.on('data', () => {});
  // 'close' follows an 'error' too: a reset (the server cutting a client off while it still writes)
  // is a close, which `once(socket, 'close')` would take for a failure.
  const closed = Promise.race([
    new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now()))),
    delay(CLOSE_DEADLINE_MS, null, { ref: false }),
  ]);
  await once(socket, 'connect');
  return { socket, closed };
}

describe('slow clients', () => {
  const service = useService({ env: { HEADERS_TIMEOUT_SECONDS: '1', REQUEST_TIMEOUT_SECONDS: '2' } });

  it.each(['integrations', 'backend', 'admin'] as const)(
    '%s closes a connection whose headers never end while serving others',
    async (name) => {
      const started = Date.now();
      const { socket, closed } = await openSocket(service.urls[name]!);
      socket.write('GET /healthz HTTP/1.1\r\nHost: example\r\n');
      // A header line now and then, never the blank line that ends them: the slowloris pattern.
      const trickle = setInterval(() => socket.writable && socket.write('X-Slow: 1\r\n'), 200);
      try {
        const served = await fetch(`${service.urls[name]}/healthz`);
        expect(served.status).toBe(200);
        const closedAt = await closed;
        expect(closedAt, 'closed by the server').not.toBeNull();
        // 1 s timeout, checked every second.
        expect(closedAt! - started).toBeLessThan(3500);
        expect(closedAt! - started).toBeGreaterThanOrEqual(900);
      } finally {
        clearInterval(trickle);
        socket.destroy();
      }
    },
  );
});

describe('connection cap', () => {
  const service = useService({ env: { MAX_CONNECTIONS: '2', LISTENERS: 'backend,admin' } });

  it('closes connections past MAX_CONNECTIONS at once, and serves again when one is freed', async () => {
    const held = [await openSocket(service.urls.backend!), await openSocket(service.urls.backend!)];
    const extra = await openSocket(service.urls.backend!);
    try {
      expect(await extra.closed, 'the connection past the cap closed').not.toBeNull();
      held[0].socket.destroy();
      await held[0].closed;
      const response = await fetch(`${service.urls.backend}/healthz`, { headers: { connection: 'close' } });
      expect(response.status).toBe(200);
    } finally {
      for (const { socket } of [...held, extra]) socket.destroy();
    }
  });
});

describe('connection limit settings', () => {
  it('has defaults and refuses a headers timeout longer than the request timeout', () => {
    expect(loadConfig({}).connectionLimits).toEqual({
      headersTimeoutSeconds: 10,
      requestTimeoutSeconds: 30,
      keepAliveTimeoutSeconds: 72,
      maxConnections: 4096,
    });
    expect(() => loadConfig({ HEADERS_TIMEOUT_SECONDS: '60', REQUEST_TIMEOUT_SECONDS: '30' })).toThrow(
      /HEADERS_TIMEOUT_SECONDS must not exceed REQUEST_TIMEOUT_SECONDS/,
    );
    expect(() => loadConfig({ MAX_CONNECTIONS: '-1' })).toThrow(/MAX_CONNECTIONS must be a whole number/);
  });
});
