// The deployment of deploy/nginx/: Debian's nginx terminating TLS in front of two instances on one
// PostgreSQL, with TRUST_PROXY set. What a partner and an operator see through it: the client's
// own address reaches the rate limits (never the proxy's, never what the client wrote in
// X-Forwarded-For), links carry the public https URLs, the console's cookie is Secure, and an
// instance taken out stops receiving traffic while every request is still answered.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN_TOKEN, testEnv } from '../support/env.js';
import { loggedRequests, type ServiceProcess, startServiceProcess } from '../support/process.js';
import { createPartner, type Partner } from './support/callback-load.js';
import { DATABASE_KINDS, type ScenarioDatabase, scenarioDatabase } from './support/databases.js';
import {
  behindProxyEnv,
  NginxProxy,
  nginxUnavailable,
  PUBLIC_NAMES,
  type SlotPorts,
  slotPorts,
} from './support/nginx.js';
import { waitFor } from './support/probes.js';

const AUTH_FAILURE_LIMIT = 4;
/** Where the operator's requests come from, as nginx sees them. */
const OPERATOR_ADDRESS = '198.51.100.20';
const unavailable = nginxUnavailable ?? (DATABASE_KINDS.includes('PostgreSQL') ? null : 'no PostgreSQL cluster');
if (unavailable) console.log(`[faults] proxy scenario skipped: ${unavailable}`);

describe.skipIf(unavailable)('nginx with TLS in front of two instances', () => {
  let database: ScenarioDatabase;
  let proxy: NginxProxy;
  const instances: ServiceProcess[] = [];
  let partner: Partner;
  let backendKey: string;
  let backendKeyId: string;

  beforeAll(async () => {
    database = await scenarioDatabase('PostgreSQL');
    const slots: SlotPorts[] = [await slotPorts(), await slotPorts()];
    proxy = await NginxProxy.start(slots);
    for (const slot of slots) {
      const env = testEnv(database.target, {
        ...behindProxyEnv(proxy, slot),
        AUTH_FAILURE_LIMIT_PER_MINUTE: String(AUTH_FAILURE_LIMIT),
      });
      instances.push(await startServiceProcess(env));
    }
    partner = await createPartner(instances[0].urls.admin, 1);
    const key = await (
      await proxy.fetch(
        'admin',
        '/admin/v1/partner-keys',
        {
          method: 'POST',
          headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'proxy test', scopes: ['countries:read', 'cities:read'] }),
        },
        OPERATOR_ADDRESS,
      )
    ).json();
    backendKey = key.key;
    backendKeyId = key.id;
  });
  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.stop('SIGKILL')));
    await proxy?.stop();
    await database?.drop();
  });

  it('counts failed authentications against the client nginx saw, whatever it wrote in X-Forwarded-For', async () => {
    const badKey = (clientAddress: string, forwardedFor?: string) =>
      proxy
        .fetch(
          'integrations',
          '/api/v1/payments/notify/',
          {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'x-api-key': 'pis_pay_not-a-key',
              ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}),
            },
            body: '{}',
          },
          clientAddress,
        )
        .then((response) => response.status);
    // Each instance counts in its own process: enough failures for both to be over the budget.
    const attacker: number[] = [];
    for (let i = 0; i < 2 * AUTH_FAILURE_LIMIT + 2; i++) attacker.push(await badKey('203.0.113.2'));
    const spoofed = [await badKey('203.0.113.2', '203.0.113.7'), await badKey('203.0.113.2', '198.51.100.9')];
    const neighbour = [await badKey('203.0.113.3'), await badKey('203.0.113.3')];
    const partnerCall = await proxy.fetch(
      'integrations',
      '/api/v1/payments/notify/',
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': partner.apiKey },
        body: JSON.stringify({
          invoice_id: partner.invoices[0].id,
          transaction_id: 'proxy-1',
          status: 'paid',
          amount: partner.invoices[0].amount,
          currency: 'SAR',
          gateway: 'tap',
        }),
      },
      '203.0.113.4',
    );
    console.log(
      `[faults] proxy rate limits: attacker 203.0.113.2 ${attacker.join(',')}; spoofed X-Forwarded-For ${spoofed.join(',')}; ` +
        `neighbour 203.0.113.3 ${neighbour.join(',')}; partner 203.0.113.4 ${partnerCall.status}`,
    );
    expect(attacker.slice(0, AUTH_FAILURE_LIMIT)).toEqual(Array(AUTH_FAILURE_LIMIT).fill(401));
    expect(attacker.slice(-2)).toEqual([429, 429]);
    expect(spoofed).toEqual([429, 429]);
    expect(neighbour).toEqual([401, 401]);
    expect(partnerCall.status).toBe(200);
  });

  it("records the operator's address, as nginx saw it, in the audit trail", async () => {
    const { results } = await (
      await fetch(`${instances[1].urls.admin}/admin/v1/audit-events?target_id=${backendKeyId}`, {
        headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
      })
    ).json();
    expect(results.map((event: { address: string }) => event.address)).toEqual([OPERATOR_ADDRESS]);
  });

  it('links to the public https URLs', async () => {
    const cities = await proxy.fetch('backend', '/v1/cities/?limit=2', {
      headers: { authorization: `Api-Key ${backendKey}` },
    });
    expect(cities.status).toBe(200);
    const page = await cities.json();
    expect(page.next).toBe(`${proxy.publicUrl('backend')}/v1/cities/?limit=2&offset=2`);
    const countries = await proxy.fetch('integrations', '/api/v1/countries/?limit=1', {
      headers: { authorization: `Api-Key ${partner.ssoSecret}` },
    });
    expect(countries.status).toBe(200);
    const text = await countries.text();
    const links = [...text.matchAll(/"(https?:\/\/[^"]+)"/g)].map((match) => match[1]);
    console.log(`[faults] proxy links: ${page.next} ${links.join(' ')}`);
    expect(links.length).toBeGreaterThan(0);
    for (const link of links)
      expect(link.startsWith('https://') && link.includes(`.example.com:${proxy.port}/`)).toBe(true);
  });

  it('gives the console a Secure session cookie over https, and not over plain http', async () => {
    const signIn = (url: string, fetcher: (url: string, init: RequestInit) => Promise<Response>) =>
      fetcher(`${url}/console/sign-in`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: url },
        body: new URLSearchParams({ token: TEST_ADMIN_TOKEN }).toString(),
        redirect: 'manual',
      });
    const proxied = await signIn(proxy.publicUrl('admin'), proxy.request);
    const direct = await signIn(instances[0].urls.admin, fetch);
    const proxiedCookie = proxied.headers.get('set-cookie') ?? '';
    console.log(`[faults] proxy console cookie: ${proxied.status} ${proxiedCookie.replace(/=[^;]+/, '=…')}`);
    expect(proxied.status).toBe(303);
    expect(proxiedCookie).toMatch(/^pi_console_session=.*; Secure/);
    expect(proxiedCookie).toMatch(/HttpOnly/);
    expect(direct.status).toBe(303);
    expect(direct.headers.get('set-cookie')).not.toMatch(/Secure/);
  });

  it('serves the partner portal on its public name, its link on it and its session cookie Secure', async () => {
    const asked = await proxy.fetch('integrations', '/api/v1/portal-sessions/', {
      method: 'POST',
      headers: { authorization: `Api-Key ${partner.ssoSecret}` },
    });
    expect(asked.status).toBe(201);
    const { url } = (await asked.json()).data.portal_session;
    expect(url.startsWith(`${proxy.publicUrl('portal')}/sign-in?token=`)).toBe(true);
    const signedIn = await proxy.request(url, { redirect: 'manual' });
    const cookie = signedIn.headers.get('set-cookie') ?? '';
    console.log(`[faults] proxy portal cookie: ${signedIn.status} ${cookie.replace(/=[^;]+/, '=…')}`);
    expect(signedIn.status).toBe(303);
    expect(cookie).toMatch(/^pi_portal_session=.*; Secure/);
    const overview = await proxy.fetch('portal', '/', { headers: { cookie: cookie.split(';')[0] } });
    expect(overview.status).toBe(200);
  });

  it('lets no Host on the public port reach an admin route, and serves them on the private address', async () => {
    const ADMIN_PATHS = [
      '/metrics',
      '/console/',
      '/console/sign-in',
      '/admin/v1/tenants',
      '/admin/v1/openapi.json',
      '/admin/docs/',
    ];
    const adminPort = new URL(instances[0].urls.admin).port;
    const hosts = [
      PUBLIC_NAMES.admin,
      `${PUBLIC_NAMES.admin}:${proxy.port}`,
      `${PUBLIC_NAMES.admin}:${proxy.privatePort}`,
      PUBLIC_NAMES.integrations,
      PUBLIC_NAMES.backend,
      'localhost',
      '127.0.0.1',
      `127.0.0.1:${adminPort}`,
      '[::1]',
      'evil.example',
    ];
    const head = (path: string, host: string | null) =>
      `GET ${path} HTTP/1.${host === null ? 0 : 1}\r\n${host === null ? '' : `Host: ${host}\r\n`}` +
      `Authorization: Bearer ${TEST_ADMIN_TOKEN}\r\nConnection: close\r\n\r\n`;
    /** Every swept request carries this in its query, so that its log line is told apart. */
    const SWEPT = 'public-port-sweep';
    /** Lines an instance's admin listener logged for the swept requests. */
    const adminLines = (instance: ServiceProcess) =>
      instance
        .output()
        .split('\n')
        .filter((line) => line.includes('"listener":"admin"') && line.includes(SWEPT)).length;
    const before = instances.map(adminLines);
    const statuses = new Map<number, number>();
    for (const path of ADMIN_PATHS) {
      for (const host of [...hosts, null]) {
        const status = await proxy.rawRequest(proxy.port, head(`${path}?${SWEPT}`, host));
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        // 421 from nginx for any name not public, the public host's own 404 for a path it has not,
        // nginx's 400 for a request without Host.
        expect([400, 404, 421], `${host} ${path}: ${status}`).toContain(status);
      }
    }
    // The positive counterpart: on the private address the admin listener answers, and each
    // instance's log has the line of a request made after the sweep.
    const marker = '/metrics?after-public-sweep';
    await waitFor('both instances to answer on the private address', async () => {
      const status = await proxy.rawRequest(
        proxy.privatePort,
        head(marker, `${PUBLIC_NAMES.admin}:${proxy.privatePort}`),
      );
      expect(status).toBe(200);
      return instances.every((instance) => loggedRequests(instance, marker) > 0);
    });
    const reached = instances.map((instance, index) => adminLines(instance) - before[index]);
    console.log(
      `[faults] proxy public port: ${ADMIN_PATHS.length * (hosts.length + 1)} admin paths under ${hosts.length + 1} Host values ` +
        `answered ${[...statuses].map(([status, count]) => `${count}x${status}`).join(', ')}; admin listener reached ${reached.join('/')} times`,
    );
    // The filter sees the admin listener's lines: it finds the marker's.
    for (const instance of instances) {
      expect(
        instance
          .output()
          .split('\n')
          .some((line) => line.includes('"listener":"admin"') && line.includes(marker)),
      ).toBe(true);
    }
    expect(reached).toEqual([0, 0]);
  });

  it('sends nothing to an instance taken out, and every request is still answered', async () => {
    const probe = async (count: number) => {
      const statuses: number[] = [];
      for (let i = 0; i < count; i++) statuses.push((await proxy.fetch('backend', '/readyz')).status);
      return statuses;
    };
    const before = instances.map((instance) => loggedRequests(instance, '/readyz'));
    expect((await probe(20)).every((status) => status === 200)).toBe(true);
    const total = () =>
      instances.reduce((sum, instance, index) => sum + loggedRequests(instance, '/readyz') - before[index], 0);
    await waitFor('both instances to log their requests', () => total() >= 20, 5000).catch(() => {});
    const shared = instances.map((instance, index) => loggedRequests(instance, '/readyz') - before[index]);
    expect(shared[0]).toBeGreaterThan(0);
    expect(shared[1]).toBeGreaterThan(0);

    const [taken, kept] = instances;
    expect(await taken.stop('SIGTERM')).toBe(0);
    const keptBefore = loggedRequests(kept, '/readyz');
    const afterStop = await probe(20);
    // Each instance's log arrives through a pipe: wait for the last lines.
    await waitFor(
      'the kept instance to log its requests',
      () => loggedRequests(kept, '/readyz') - keptBefore >= 20,
      5000,
    ).catch(() => {});
    const keptServed = loggedRequests(kept, '/readyz') - keptBefore;
    // Passive checks: one refused connection takes the instance out for fail_timeout.
    const takenPort = new URL(taken.urls.backend).port;
    const attempts = proxy
      .errorLog()
      .split('\n')
      .filter((line) => line.includes('connect() failed') && line.includes(`127.0.0.1:${takenPort}/`)).length;
    console.log(
      `[faults] proxy failover: /readyz shared ${shared.join('/')} between the instances; ` +
        `one stopped, then ${afterStop.filter((status) => status === 200).length}/20 answered 200, ` +
        `${keptServed} by the other, ${attempts} connection attempt(s) to the stopped one`,
    );
    expect(afterStop).toEqual(Array(20).fill(200));
    expect(keptServed).toBe(20);
    expect(attempts).toBe(1);
  });
});
