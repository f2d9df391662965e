// The admin listener answers only for its own names (DECISIONS §11): any other `Host` is a 421 in
// the admin error body, on every route (API, console, docs, /metrics, the probes, unknown paths).
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config.js';
import { useApps } from '../../support/apps.js';
import { TEST_ADMIN_TOKEN, testEnv } from '../../support/env.js';

const PATHS = [
  '/metrics',
  '/console/',
  '/console/sign-in',
  '/admin/docs/',
  '/admin/v1/openapi.json',
  '/admin/v1/tenants',
  '/healthz',
  '/readyz',
  '/no-such-route',
];
/** Names a page rebound to the listener's address, or a proxy's mistake, would send. */
const FOREIGN_HOSTS = [
  'evil.example',
  'evil.example:8090',
  'localhost.evil.example',
  '127.0.0.1.nip.io',
  'localhost.',
  '[::2]',
  'admin.internal.example.evil',
];

/** A request's status on the admin app with the given `Host`. */
async function statusFor(service: ReturnType<typeof useApps>, host: string, url: string) {
  const response = await service.apps.admin!.inject({
    method: 'GET',
    url,
    headers: { host, authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
  });
  return response;
}

describe('the admin listener, by default', () => {
  const service = useApps(['admin'], { listen: true });

  it('answers 421 in its error body to a Host that is not its own, on every route', async () => {
    for (const host of FOREIGN_HOSTS) {
      for (const url of PATHS) {
        const response = await statusFor(service, host, url);
        const shown = `${host} ${url}: ${response.statusCode} ${response.body.slice(0, 200)}`;
        expect(response.statusCode, shown).toBe(421);
        expect(response.json(), shown).toEqual({
          error: { code: 'MISDIRECTED_REQUEST', message: expect.any(String) },
        });
        expect(response.body, shown).not.toContain('process_cpu');
      }
    }
  });

  it('answers loopback names, with or without a port, in any case', async () => {
    for (const host of [
      'localhost',
      'localhost:8090',
      'LocalHost:1234',
      '127.0.0.1',
      '127.0.0.1:8090',
      '[::1]',
      '[::1]:8090',
    ]) {
      for (const url of ['/metrics', '/healthz', '/admin/v1/tenants']) {
        const response = await statusFor(service, host, url);
        expect(response.statusCode, `${host} ${url}: ${response.body.slice(0, 200)}`).toBe(200);
      }
    }
  });

  /**
   * The status of `request`, sent as is over a real connection, which the server closes after its
   * answer (HTTP/1.0, `Connection: close`): a client closing its side first may lose a slow answer.
   */
  function rawStatus(request: string): Promise<number> {
    const { hostname, port } = new URL(service.urls.admin!);
    return new Promise<number>((resolve, reject) => {
      const socket = connect(Number(port), hostname, () => socket.write(request));
      const chunks: Buffer[] = [];
      socket.on('data', (chunk) => chunks.push(chunk));
      socket.on('end', () => resolve(Number(Buffer.concat(chunks).toString('latin1').slice(9, 12))));
      socket.on('error', reject);
    });
  }

  it('answers 421 to a request with no Host at all (HTTP/1.0), over a real connection', async () => {
    expect(await rawStatus('GET /metrics HTTP/1.0\r\n\r\n')).toBe(421);
    // And the listener's own address, as partnerctl and Prometheus send it.
    expect((await fetch(`${service.urls.admin}/metrics`)).status).toBe(200);
  });

  it('reads the host of an absolute-form target before Host, and answers 421 to several Host headers', async () => {
    const close = 'Connection: close\r\n\r\n';
    expect(await rawStatus(`GET http://evil.example/metrics HTTP/1.1\r\nHost: localhost\r\n${close}`)).toBe(421);
    expect(await rawStatus(`GET http://localhost/metrics HTTP/1.1\r\nHost: evil.example\r\n${close}`)).toBe(200);
    expect(await rawStatus(`GET /metrics HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n${close}`)).toBe(421);
    expect(await rawStatus(`GET /metrics HTTP/1.1\r\nHost: localhost\r\n${close}`)).toBe(200);
  });
});

describe('the admin listener with ADMIN_PUBLIC_URL', () => {
  const service = useApps(['admin'], { env: { ADMIN_PUBLIC_URL: 'https://admin.internal.example:8443' } });

  it("answers that URL's host besides loopback", async () => {
    for (const host of ['admin.internal.example', 'admin.internal.example:8443', 'localhost']) {
      expect((await statusFor(service, host, '/metrics')).statusCode, host).toBe(200);
    }
    for (const host of FOREIGN_HOSTS) expect((await statusFor(service, host, '/metrics')).statusCode, host).toBe(421);
  });
});

describe('the admin listener with ADMIN_ALLOWED_HOSTS', () => {
  const service = useApps(['admin'], { env: { ADMIN_ALLOWED_HOSTS: 'ops.example, 10.0.0.5' } });

  it('answers exactly the names listed', async () => {
    for (const host of ['ops.example', 'OPS.example:8090', '10.0.0.5:8090']) {
      expect((await statusFor(service, host, '/metrics')).statusCode, host).toBe(200);
    }
    for (const host of ['localhost', '127.0.0.1:8090', ...FOREIGN_HOSTS]) {
      expect((await statusFor(service, host, '/metrics')).statusCode, host).toBe(421);
    }
  });

  it('refuses a setting that is not a list of names', () => {
    for (const value of ['ops.example:8090', 'https://ops.example', 'ops example']) {
      expect(
        () => loadConfig(testEnv({ databaseUrl: 'postgres://x@127.0.0.1/x' }, { ADMIN_ALLOWED_HOSTS: value })),
        value,
      ).toThrow(ConfigError);
    }
  });
});
