// Debian's nginx in front of two service instances, as deploy/nginx/ describes it: the example
// files themselves, with this run's certificate (a self-signed one made here with openssl), its
// listening port and the instances' ports swapped in. nginx runs in the foreground as a child of
// the test, with its own prefix, configuration and logs in a temporary directory.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { Agent, fetch as undiciFetch } from 'undici';
import { projectRoot } from '../../../src/paths.js';
import { selfSignedCertificate } from '../../support/certificate.js';
import { freePort } from '../../support/free-port.js';
import { accepts, waitFor } from './probes.js';

const NGINX = '/usr/sbin/nginx';
const EXAMPLE_DIR = path.join(projectRoot, 'deploy/nginx');
/** The public names of the example; the test's client resolves them to loopback. */
export const PUBLIC_NAMES = {
  integrations: 'api.example.com',
  backend: 'backend.example.com',
  portal: 'portal.example.com',
  admin: 'admin.example.com',
};
/** Each instance slot's listener ports in the example, in the order integrations, backend, admin, portal. */
const EXAMPLE_SLOTS = [
  [8080, 8081, 8090, 8082],
  [18080, 18081, 18090, 18082],
];

/**
 * How long the example's nginx keeps a port it saw fail out of rotation (`fail_timeout`, the same
 * on every upstream server): step 3 of docs/deploy.md's rolling upgrade waits for it.
 */
export const EXAMPLE_FAIL_TIMEOUT_MS = (() => {
  const text = readFileSync(path.join(EXAMPLE_DIR, 'partner-integrations.conf'), 'utf8');
  const timeouts = new Set([...text.matchAll(/fail_timeout=(\d+)s/g)].map((match) => Number(match[1])));
  if (timeouts.size !== 1)
    throw new Error('deploy/nginx/partner-integrations.conf: expected one fail_timeout for every server');
  return [...timeouts][0] * 1000;
})();

/** The header that tells this run's nginx which address a client connects from (see `request`). */
const TEST_CLIENT_HEADER = 'X-Test-Client-Address';

/** Why nginx cannot run here, or null. */
export const nginxUnavailable = existsSync(NGINX) ? null : `${NGINX} not found (apt-get install nginx)`;

/** Ports of one instance's listeners. */
export interface SlotPorts {
  integrations: number;
  backend: number;
  admin: number;
  portal: number;
}

export async function slotPorts(): Promise<SlotPorts> {
  return {
    integrations: await freePort(),
    backend: await freePort(),
    admin: await freePort(),
    portal: await freePort(),
  };
}

/** The environment of an instance in `slot` behind this proxy (TRUST_PROXY and the public URLs). */
export function behindProxyEnv(proxy: NginxProxy, slot: SlotPorts): Record<string, string> {
  return {
    INTEGRATIONS_PORT: String(slot.integrations),
    BACKEND_PORT: String(slot.backend),
    ADMIN_PORT: String(slot.admin),
    PORTAL_PORT: String(slot.portal),
    TRUST_PROXY: '127.0.0.1',
    INTEGRATIONS_PUBLIC_URL: proxy.publicUrl('integrations'),
    BACKEND_PUBLIC_URL: proxy.publicUrl('backend'),
    ADMIN_PUBLIC_URL: proxy.publicUrl('admin'),
    PORTAL_PUBLIC_URL: proxy.publicUrl('portal'),
  };
}

/** The example configuration with this run's certificate, ports and paths. */
function configuredExample(options: {
  cert: string;
  key: string;
  port: number;
  privatePort: number;
  slots: SlotPorts[];
  dir: string;
}) {
  let text = readFileSync(path.join(EXAMPLE_DIR, 'partner-integrations.conf'), 'utf8');
  const replace = (from: string, to: string) => {
    if (!text.includes(from)) throw new Error(`deploy/nginx/partner-integrations.conf no longer has ${from}`);
    text = text.replaceAll(from, to);
  };
  replace('/etc/ssl/certs/partner-integrations.pem', options.cert);
  replace('/etc/ssl/private/partner-integrations.key', options.key);
  replace(
    '/etc/nginx/snippets/partner-integrations-proxy.conf',
    path.join(EXAMPLE_DIR, 'partner-integrations-proxy.conf'),
  );
  replace('listen 443 ssl default_server;', `listen 127.0.0.1:${options.port} ssl default_server;`);
  // The private address operators reach: another port on loopback here.
  replace('listen 10.0.0.2:443 ssl;', `listen 127.0.0.1:${options.privatePort} ssl;`);
  EXAMPLE_SLOTS.forEach((ports, index) => {
    const slot = options.slots[index];
    [slot.integrations, slot.backend, slot.admin, slot.portal].forEach((port, listener) => {
      replace(`server 127.0.0.1:${ports[listener]} `, `server 127.0.0.1:${port} `);
    });
  });
  return text;
}

/** Where this run's nginx listens, and a client for it that trusts its certificate. */
export class NginxProxy {
  private child: ChildProcess | null = null;

  private readonly agent: Agent;

  private constructor(
    readonly dir: string,
    /** The public address's port. */
    readonly port: number,
    /** The private address's port (the admin listener's server). */
    readonly privatePort: number,
    private readonly ca: string,
  ) {
    this.agent = new Agent({
      connect: {
        ca,
        // The public names are the example's; here they all are this machine.
        lookup: (_hostname, options, callback) =>
          (options as { all?: boolean }).all
            ? (callback as (error: null, addresses: { address: string; family: number }[]) => void)(null, [
                { address: '127.0.0.1', family: 4 },
              ])
            : callback(null, '127.0.0.1', 4),
      },
    });
  }

  /** nginx on a free port, proxying to the two instance slots. */
  static async start(slots: SlotPorts[]): Promise<NginxProxy> {
    const dir = mkdtempSync(path.join(tmpdir(), 'pi-nginx-'));
    mkdirSync(path.join(dir, 'logs'));
    const { cert, key } = selfSignedCertificate(dir, Object.values(PUBLIC_NAMES));
    const port = await freePort();
    const privatePort = await freePort();
    const site = configuredExample({ cert, key, port, privatePort, slots, dir });
    writeFileSync(path.join(dir, 'partner-integrations.conf'), site);
    // The main file Debian's /etc/nginx/nginx.conf would be, reduced to what a test needs; one
    // process (no master and workers), so nothing runs as another user nor outlives the test.
    writeFileSync(
      path.join(dir, 'nginx.conf'),
      [
        'daemon off;',
        'master_process off;',
        `pid ${path.join(dir, 'nginx.pid')};`,
        `error_log ${path.join(dir, 'logs/error.log')} warn;`,
        'events { worker_connections 1024; }',
        'http {',
        `  access_log ${path.join(dir, 'logs/access.log')};`,
        // Every client of the test connects from this machine: the address nginx sees (its
        // $remote_addr) is taken from TEST_CLIENT_HEADER, as if clients came from elsewhere.
        '  set_real_ip_from 127.0.0.1;',
        `  real_ip_header ${TEST_CLIENT_HEADER};`,
        ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(
          (kind) => `  ${kind}_temp_path ${path.join(dir, `${kind}_temp`)};`,
        ),
        `  include ${path.join(dir, 'partner-integrations.conf')};`,
        '}',
        '',
      ].join('\n'),
    );
    const proxy = new NginxProxy(dir, port, privatePort, readFileSync(cert, 'utf8'));
    const args = ['-p', `${dir}/`, '-c', path.join(dir, 'nginx.conf'), '-e', path.join(dir, 'logs/error.log')];
    execFileSync(NGINX, [...args, '-t', '-q'], { stdio: 'pipe' });
    proxy.child = spawn(NGINX, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    // Its port, not a request through it: a request before the instances run would mark them failed.
    await waitFor('nginx listening', async () => (await accepts(port)) && (await accepts(privatePort)));
    return proxy;
  }

  /** A host's URL through the proxy: the admin's on the private address, the others' on the public one. */
  publicUrl(host: keyof typeof PUBLIC_NAMES): string {
    return `https://${PUBLIC_NAMES[host]}:${host === 'admin' ? this.privatePort : this.port}`;
  }

  /**
   * One request over TLS to `port` with exactly the request head given (any `Host`, or none),
   * as a client that controls every byte would send it: the status nginx or an instance answered.
   */
  rawRequest(port: number, head: string): Promise<number> {
    return new Promise((resolve, reject) => {
      const socket = tlsConnect({ host: '127.0.0.1', port, ca: this.ca, servername: PUBLIC_NAMES.integrations }, () =>
        socket.write(head),
      );
      const chunks: Buffer[] = [];
      socket.on('data', (chunk) => chunks.push(chunk));
      socket.on('end', () => resolve(Number(Buffer.concat(chunks).toString('latin1').slice(9, 12))));
      socket.on('error', reject);
    });
  }

  /** A request through the proxy to `host`'s public name (see `request`). */
  fetch(host: keyof typeof PUBLIC_NAMES, pathAndQuery: string, init: RequestInit = {}, clientAddress?: string) {
    return this.request(`${this.publicUrl(host)}${pathAndQuery}`, init, clientAddress);
  }

  /**
   * A request to one of the public URLs, over TLS with the certificate checked against this run's,
   * from `clientAddress` as nginx sees it (a documentation address such as 203.0.113.7: a label in
   * a header, no packet goes there), or from this machine.
   */
  request = (url: string, init: RequestInit = {}, clientAddress?: string): Promise<Response> => {
    const headers = new Headers(init.headers);
    if (clientAddress) headers.set(TEST_CLIENT_HEADER, clientAddress);
    return undiciFetch(url, { ...(init as object), headers, dispatcher: this.agent }) as unknown as Promise<Response>;
  };

  /** What nginx logged about its upstreams (refused connections: an instance marked failed). */
  errorLog(): string {
    return readFileSync(path.join(this.dir, 'logs/error.log'), 'utf8');
  }

  async stop(): Promise<void> {
    await this.agent.close();
    if (this.child && this.child.exitCode === null) {
      const exited = once(this.child, 'exit');
      this.child.kill('SIGTERM');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
