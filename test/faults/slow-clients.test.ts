// Thousands of idle sockets and slowloris clients (headers sent a line at a time, never finished)
// on the integrations listener: other clients are still served (a health check's latency and a
// callback load meanwhile), and the server closes the slow connections after its header timeout.
import { connect, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { testEnv } from '../support/env.js';
import { type ServiceProcess, startServiceProcess } from '../support/process.js';
import { CallbackLoad, createPartner } from './support/callback-load.js';
import { type ScenarioDatabase, scenarioDatabase } from './support/databases.js';
import { Prober, waitFor } from './support/probes.js';

const IDLE_SOCKETS = 2000;
const SLOWLORIS_SOCKETS = 300;
const HEADERS_TIMEOUT_SECONDS = 2;
/** A health check slower than this while the slow clients hold on is a failure to serve. */
const HEALTH_BOUND_MS = 1000;

interface Held {
  socket: Socket;
  /** When the server closed it, if it did. */
  closedAt: number | null;
}

function hold(url: string, onConnect: (socket: Socket) => void): Promise<Held> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const held: Held = { socket: connect(Number(port), hostname), closedAt: null };
    held.socket.on('error', () => {});
    held.socket.on('close', () => (held.closedAt ??= Date.now()));
    held.socket.once('connect', () => {
      onConnect(held.socket);
      resolve(held);
    });
  });
}

describe('slow and idle clients', () => {
  let database: ScenarioDatabase;
  let service: ServiceProcess | undefined;
  const held: Held[] = [];
  let drip: NodeJS.Timeout | undefined;
  afterAll(async () => {
    clearInterval(drip);
    for (const { socket } of held) socket.destroy();
    await service?.stop('SIGKILL');
    await database?.drop();
  });

  it(`serves others while ${IDLE_SOCKETS} idle and ${SLOWLORIS_SOCKETS} slowloris sockets hold on`, async () => {
    database = await scenarioDatabase('embedded server');
    service = await startServiceProcess(
      // The header and request timeouts (HEADERS_TIMEOUT_SECONDS, REQUEST_TIMEOUT_SECONDS) are what close them.
      testEnv(database.target, {
        HEADERS_TIMEOUT_SECONDS: String(HEADERS_TIMEOUT_SECONDS),
        REQUEST_TIMEOUT_SECONDS: '5',
      }),
    );
    const { integrations, admin } = service.urls;
    const partner = await createPartner(admin, 10);
    const health = new Prober(() => `${integrations}/healthz`, 100, 5000);
    const load = new CallbackLoad(`${integrations}/api/v1/payments/notify/`, partner, { rate: 20, concurrency: 4 });
    load.start();

    const openedAt = Date.now();
    const idle: Held[] = [];
    for (let i = 0; i < IDLE_SOCKETS; i += 200) {
      idle.push(...(await Promise.all(Array.from({ length: 200 }, () => hold(integrations, () => {})))));
    }
    const slowloris = await Promise.all(
      Array.from({ length: SLOWLORIS_SOCKETS }, () =>
        hold(integrations, (socket) => socket.write('POST /api/v1/payments/notify/ HTTP/1.1\r\nHost: x\r\n')),
      ),
    );
    held.push(...idle, ...slowloris);
    // One more header line a second on each: never the blank line that ends them.
    drip = setInterval(() => {
      for (const { socket, closedAt } of slowloris) if (closedAt === null) socket.write(`X-Slow-${Date.now()}: 1\r\n`);
    }, 1000);

    const closedBy = (sockets: Held[]) => sockets.filter((entry) => entry.closedAt !== null).length;
    await waitFor(
      'the slowloris sockets closed by the server',
      () => closedBy(slowloris) === SLOWLORIS_SOCKETS,
      (HEADERS_TIMEOUT_SECONDS + 8) * 1000,
    ).catch(() => {});
    const slowlorisClosedMs = Math.max(...slowloris.map((entry) => (entry.closedAt ?? Date.now()) - openedAt));
    clearInterval(drip);
    await load.stop();
    const samples = await health.stop();
    const during = samples.filter((sample) => sample.at >= openedAt);
    console.log(
      `[faults] slow clients: ${IDLE_SOCKETS} idle and ${SLOWLORIS_SOCKETS} slowloris sockets; health checks ${during.length} ` +
        `(all 200: ${during.every((sample) => sample.status === 200)}, slowest ${Math.max(...during.map((s) => s.ms))} ms); ` +
        `callbacks sent ${load.sent} (${load.describe()}); closed by the server: slowloris ${closedBy(slowloris)}/${SLOWLORIS_SOCKETS} ` +
        `(last after ${slowlorisClosedMs} ms), idle ${closedBy(idle)}/${IDLE_SOCKETS}`,
    );
    expect(during.length).toBeGreaterThan(10);
    expect(during.every((sample) => sample.status === 200 && sample.ms < HEALTH_BOUND_MS)).toBe(true);
    expect([...load.answered.keys()]).toEqual(['200']);
    // Needs the header timeout (HEADERS_TIMEOUT_SECONDS, issue 15's slow-client fix).
    expect(closedBy(slowloris)).toBe(SLOWLORIS_SOCKETS);
  });
});
