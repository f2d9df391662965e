// Debian's PgBouncer in transaction pooling mode in front of one of the suite's PostgreSQL servers,
// on a free loopback port, in the foreground as a child of the test, with its configuration in a
// temporary directory. As root it drops to the `postgres` user, as the cluster's programs do.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../../support/free-port.js';
import { accepts, waitFor } from './probes.js';

const PGBOUNCER = '/usr/sbin/pgbouncer';

/** Why PgBouncer cannot run here, or null. CI installs it (.ci/run): there its absence is a failure, not a skip. */
export const pgbouncerUnavailable =
  existsSync(PGBOUNCER) || process.env.CI ? null : `${PGBOUNCER} not found (apt-get install pgbouncer)`;

/** The pools' size: above what a service process opens through it, so no client waits for a server here. */
const POOL_SIZE = 40;

export class PgBouncer {
  private output = '';

  private constructor(
    private readonly child: ChildProcess,
    private readonly root: string,
    readonly port: number,
  ) {
    child.stdout!.on('data', (chunk) => (this.output += chunk));
    child.stderr!.on('data', (chunk) => (this.output += chunk));
  }

  /** PgBouncer started in front of the PostgreSQL server on loopback `serverPort`, accepting connections. */
  static async start(serverPort: number): Promise<PgBouncer> {
    const root = mkdtempSync(path.join(tmpdir(), 'pi-faults-pgbouncer-'));
    // The postgres user reads the configuration again on a reload.
    chmodSync(root, 0o755);
    const port = await freePort();
    writeFileSync(path.join(root, 'users.txt'), '"postgres" ""\n', { mode: 0o644 });
    writeConfiguration(root, port, serverPort);
    const asRoot = process.getuid?.() === 0 ? ['-u', 'postgres'] : [];
    const child = spawn(PGBOUNCER, [...asRoot, path.join(root, 'pgbouncer.ini')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const bouncer = new PgBouncer(child, root, port);
    await waitFor(
      'PgBouncer to accept connections',
      () => child.exitCode === null && accepts(port).then((yes) => yes || child.exitCode !== null),
      10_000,
    );
    if (child.exitCode !== null) throw new Error(`pgbouncer exited (${child.exitCode}):\n${bouncer.output}`);
    return bouncer;
  }

  /** The URL of `database` through PgBouncer. */
  url(database: string): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  /** Sends new server connections to the server on `serverPort` from now on (a reload, as after a failover). */
  repoint(serverPort: number): void {
    writeConfiguration(this.root, this.port, serverPort);
    this.child.kill('SIGHUP');
  }

  /** What PgBouncer logged, for a failure's report. */
  log(): string {
    return this.output;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null) {
      const exited = once(this.child, 'exit');
      this.child.kill('SIGTERM');
      await exited;
    }
    rmSync(this.root, { recursive: true, force: true });
  }
}

function writeConfiguration(root: string, port: number, serverPort: number): void {
  const ini = `[databases]
* = host=127.0.0.1 port=${serverPort}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
auth_type = trust
auth_file = ${path.join(root, 'users.txt')}
pool_mode = transaction
default_pool_size = ${POOL_SIZE}
max_client_conn = 1000
; After a failed login PgBouncer waits this long before trying the server again (15 s by default):
; what docs/deploy.md advises, so that it reaches a promoted standby within a second of its re-pointing.
server_login_retry = 1
logfile =
pidfile =
`;
  writeFileSync(path.join(root, 'pgbouncer.ini'), ini, { mode: 0o644 });
}
