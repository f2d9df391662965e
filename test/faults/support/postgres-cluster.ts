// A PostgreSQL cluster of the fault suite's own, in a temporary directory on a free port, so a
// scenario can stop and start it without disturbing the shared server. initdb and pg_ctl refuse
// to run as root: when the tests run as root they run as the `postgres` user.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../../support/free-port.js';

const BIN_DIRS = ['/usr/lib/postgresql/15/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/17/bin'];
const binDir = BIN_DIRS.find((dir) => existsSync(path.join(dir, 'pg_ctl')));
const isRoot = process.getuid?.() === 0;

/** Why the suite cannot run its own cluster here, or null when it can. */
export const ownClusterUnavailable: string | null = !binDir
  ? `no PostgreSQL server binaries in ${BIN_DIRS.join(', ')}`
  : isRoot && !existsSync('/usr/sbin/runuser')
    ? 'running as root without runuser to drop to the postgres user'
    : null;

function run(program: string, args: string[]): string {
  const command = path.join(binDir!, program);
  const [file, argv] = isRoot ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args];
  return execFileSync(file, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** A temporary directory for a cluster's data directory, `data` in it. */
function newRoot(): { root: string; dataDir: string } {
  const root = mkdtempSync(path.join(tmpdir(), 'pi-faults-pg-'));
  // The postgres user must reach the directory through the temporary root.
  chmodSync(root, 0o777);
  return { root, dataDir: path.join(root, 'data') };
}

export class PostgresCluster {
  private constructor(
    readonly dataDir: string,
    readonly port: number,
    private readonly root: string,
  ) {}

  /** A new cluster, started, trusting local connections (it listens on loopback only). */
  static async create(): Promise<PostgresCluster> {
    const { root, dataDir } = newRoot();
    run('initdb', ['-D', dataDir, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
    const cluster = new PostgresCluster(dataDir, await freePort(), root);
    cluster.start();
    return cluster;
  }

  /** The cluster another process of the run created (the suite's global setup). */
  static attach(dataDir: string, port: number): PostgresCluster {
    return new PostgresCluster(dataDir, port, path.dirname(dataDir));
  }

  /**
   * A standby of this cluster on a port of its own (pg_basebackup -R: streaming replication from
   * here), started; this cluster then commits only once the standby has the commit
   * (`synchronous_standby_names`), so a promoted standby has everything acknowledged.
   */
  async createStandby(): Promise<PostgresCluster> {
    const { root, dataDir } = newRoot();
    // The client programs' options that name this cluster.
    const here = ['-h', '127.0.0.1', '-p', String(this.port), '-U', 'postgres'];
    run('pg_basebackup', [...here, '-D', dataDir, '-R', '-X', 'stream']);
    const standby = new PostgresCluster(dataDir, await freePort(), root);
    standby.start();
    run('psql', [...here, '-qc', "alter system set synchronous_standby_names = '*'"]);
    run('pg_ctl', ['-D', this.dataDir, 'reload']);
    return standby;
  }

  /** Ends recovery on a standby: it accepts writes from now on. */
  promote(): void {
    run('pg_ctl', ['-D', this.dataDir, '-w', 'promote']);
  }

  url(database = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  start(): void {
    const options = `-p ${this.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off -c max_connections=200`;
    run('pg_ctl', ['-D', this.dataDir, '-o', options, '-l', path.join(this.dataDir, 'server.log'), '-w', 'start']);
  }

  isRunning(): boolean {
    try {
      run('pg_ctl', ['-D', this.dataDir, 'status']);
      return true;
    } catch {
      return false; // pg_ctl status exits 3 when the server is not running
    }
  }

  /** A fast shutdown: sessions are ended, as in a restart by an operator or an orchestrator. */
  stop(): void {
    run('pg_ctl', ['-D', this.dataDir, '-m', 'fast', '-w', 'stop']);
  }

  /** An immediate shutdown: every backend killed at once, as in a crash; recovery runs at the next start. */
  kill(): void {
    run('pg_ctl', ['-D', this.dataDir, '-m', 'immediate', '-w', 'stop']);
  }

  destroy(): void {
    try {
      run('pg_ctl', ['-D', this.dataDir, '-m', 'immediate', '-w', 'stop']);
    } catch {
      // already stopped
    }
    rmSync(this.root, { recursive: true, force: true });
  }
}
