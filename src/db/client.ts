// One driver, postgres.js, against the PostgreSQL server of DATABASE_URL when it is set, else
// against the embedded server the service runs in DATA_DIR (embedded-server.ts). With
// DATABASE_DIRECT_URL, DATABASE_URL is a transaction pooler (PgBouncer) and what needs a session
// connects to the direct URL. Everything above this file sees `Database`.
import { statfsSync } from 'node:fs';
import { Param, SQL, StringChunk } from 'drizzle-orm';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { ConfigError, DEFAULT_DATABASE_REQUEST_TIMEOUT_MS } from '../config.js';
import { type Logger, maskPassword } from '../logger.js';
import { keepingActiveSpan, traceStatement } from '../tracing.js';
import { type Database, drizzleOn, type StatementSender, type Transaction } from './drizzle.js';
import { startEmbeddedServer } from './embedded-server.js';
import { DatabaseUnavailableError, isConflict, unavailability } from './errors.js';
import { moveFromPglite } from './pglite-move.js';
import type { RunStatement } from './statements.js';
import { postgresConnection } from './url.js';

export type { Database, Schema, Transaction } from './drizzle.js';
/** Either the database or an open transaction: inside a transaction, pass the transaction. */
export type Executor = Database | Transaction;
/** postgres.js itself, as the handle configures it: money (numeric) stays text. */
type Sql = postgres.Sql<{ numeric: string }>;
export type TransactionSql = postgres.TransactionSql<{ numeric: string }>;
type Parameters = postgres.ParameterOrJSON<string>[];

/**
 * Runs `read` in one read-only snapshot, for a view assembled from several queries that must agree
 * with each other (an invoice and its attempts, written together, are then never shown apart).
 */
export function readInOneSnapshot<T>(db: Database, read: (tx: Transaction) => Promise<T>): Promise<T> {
  return db.transaction(read, { isolationLevel: 'repeatable read', accessMode: 'read only' });
}

/**
 * Runs named statements (src/db/statements.ts) through Drizzle on `executor`: the database, or a
 * Drizzle transaction, whose work they then join beside the builder's queries. Drizzle sends one
 * parameter per placeholder, in order: each `$n` of the text becomes one, with the n-th value.
 */
export function runIn(executor: Executor): RunStatement {
  return async (statement, params) => {
    const pieces = statement.text.split(/\$(\d+)/);
    const chunks = pieces.map((piece, index) =>
      index % 2 === 0 ? new StringChunk(piece) : new Param(params[Number(piece) - 1]),
    );
    // The statement says what its rows are: the driver cannot.
    return [...(await executor.execute(new SQL(chunks)))] as never[];
  };
}

export interface DatabaseHandle {
  /**
   * The database. The wait for a connection and each statement (a transaction as a whole) sent
   * through it, `executeSql` or dedicated connections are bounded by the request deadline
   * (DATABASE_REQUEST_TIMEOUT_MS), except within `withoutDeadline`.
   */
  db: Database;
  /**
   * Applies the migrations of `folder` not applied yet, with Drizzle's migrator, on connections that
   * keep their session (DATABASE_DIRECT_URL's when set): behind a transaction pooler the pooler's own
   * timeouts and a schema change's session settings are no place for them. A wait for a table's
   * lock longer than `lockTimeoutMs` fails the migrations (SQLSTATE 55P03), applying none.
   */
  migrate(folder: string, lockTimeoutMs: number): Promise<void>;
  /**
   * Set while DATA_DIR holds PGlite data of an earlier release not yet moved to the embedded
   * server: migrateDatabase runs it once the migrations have made the schema.
   */
  movePgliteData?: () => Promise<void>;
  /**
   * Runs raw SQL with $1.. parameters on the pool, for scripts and tests. Text without parameters
   * may hold several statements, sent in one round trip. `Row` is what the caller's statement
   * returns: the driver does not know it.
   */
  executeSql<Row = Record<string, unknown>>(text: string, values?: unknown[]): Promise<{ rows: Row[] }>;
  /** Runs a named statement (src/db/statements.ts) on the pool. */
  run: RunStatement;
  /** Runs `task` in one transaction of named statements. */
  transact<T>(task: (run: RunStatement) => Promise<T>): Promise<T>;
  /**
   * Runs `task` in a transaction of postgres.js itself, opened with `options` (such as 'isolation
   * level repeatable read read only'), for what Drizzle does not do: COPY streams and cursors.
   */
  driverTransaction<T>(options: string, task: (tx: TransactionSql) => Promise<T>): Promise<T>;
  /**
   * `count` connections of their own, apart from the pool, for the hottest statements (the payment
   * callback's). The pool hands out the connection idle the longest, so a statement sent through
   * it visits every backend in turn, each cold; dedicated connections keep it on the same few,
   * warm. Closed with the handle.
   */
  dedicatedConnections(count: number): DedicatedConnections;
  /**
   * Calls `onNotify` for every NOTIFY on `channel` from any process, and `onListen` each time the
   * listening (re)starts, when notifications may have been missed.
   */
  listen(channel: string, onNotify: (payload: string) => void, onListen: () => void): Promise<void>;
  /**
   * Runs `task` with the request deadline lifted: for setting up the service (migrations,
   * seeding), which runs before any request is taken and may rightly take minutes.
   */
  withoutDeadline<T>(task: () => Promise<T>): Promise<T>;
  /** Runs `task` while this process holds the PostgreSQL session advisory lock `key` (on a connection that keeps its session). */
  withAdvisoryLock<T>(key: number, task: () => Promise<T>): Promise<T>;
  /**
   * Why the database cannot serve now (unreachable within READINESS_TIMEOUT_MS, or writes refused
   * for lack of space), or null when it can: what /readyz reports.
   */
  unavailable(): Promise<DatabaseUnavailableError | null>;
  /** Connections (size), those busy with a query or transaction (inUse), and work waiting for one. */
  poolStatistics(): { size: number; inUse: number; waiting: number };
  /** Statements and transactions abandoned at the request deadline since the handle opened. */
  deadlinesExceeded(): number;
  /** The request deadline (DATABASE_REQUEST_TIMEOUT_MS) that bounds each wait through the handle. */
  deadlineMs: number;
  close(): Promise<void>;
}

export interface DedicatedConnections {
  /** Its connections: statements under way at once. */
  size: number;
  /** The request deadline each statement is bounded by (DATABASE_REQUEST_TIMEOUT_MS). */
  deadlineMs: number;
  /**
   * Runs a named statement on one of them, kept prepared (unless behind a transaction pooler):
   * Drizzle would build it again on every call.
   */
  run: RunStatement;
}

/**
 * Queries and transactions under way, counted where they are sent (what postgres.js does not report),
 * the last one refused for lack of disk space, and the request deadline: postgres.js bounds neither
 * the wait for a pool connection nor a statement, and a hung server answers neither.
 */
class QueryTracker {
  private count = 0;
  private diskFull: { error: DatabaseUnavailableError; at: number } | null = null;
  /** Work abandoned at the deadline so far. */
  deadlinesExceeded = 0;
  /** Set-up tasks under way (`withoutDeadline`): work sent meanwhile has no deadline. */
  deadlineLifted = 0;

  /** Connections: the pool's and every set of dedicated ones. */
  constructor(
    public size: number,
    private readonly deadlineMs: number,
  ) {}

  /**
   * Counts `work` from now until it settles. Waiting on a postgres.js query is what sends it, at the
   * next tick: a `.values()` the caller chains on it before then still applies. With `abandon`,
   * work not settled within the deadline is abandoned: `abandon` settles it with the error given,
   * which the caller then sees as a database unavailable (a 503 with Retry-After on every host).
   */
  track<T extends PromiseLike<unknown>>(work: T, abandon?: (error: DatabaseUnavailableError) => void): T {
    this.count++;
    const timer =
      abandon && this.deadlineLifted === 0
        ? setTimeout(() => {
            this.deadlinesExceeded++;
            abandon(new DatabaseUnavailableError(`database did not answer within ${this.deadlineMs} ms`));
          }, this.deadlineMs)
        : undefined;
    work.then(
      () => {
        clearTimeout(timer);
        this.count--;
      },
      (error) => {
        clearTimeout(timer);
        this.count--;
        this.failed(error);
      },
    );
    return work;
  }

  /** A postgres.js query, counted and bounded by the deadline. */
  trackQuery<Q extends PromiseLike<unknown>>(query: Q): Q {
    return this.track(query, (error) => abandonQuery(query, error));
  }

  statistics() {
    return { size: this.size, inUse: Math.min(this.count, this.size), waiting: Math.max(0, this.count - this.size) };
  }

  private failed(error: unknown): void {
    const cause = unavailability(error);
    if (cause?.reason === 'disk_full') this.diskFull = { error: cause, at: Date.now() };
  }

  /** The disk-full failure of the last DISK_FULL_HOLD_MS, if any. */
  recentDiskFull(): DatabaseUnavailableError | null {
    return this.diskFull && Date.now() - this.diskFull.at < DISK_FULL_HOLD_MS ? this.diskFull.error : null;
  }
}

/**
 * Settles a postgres.js query with `error` now. One still waiting in the pool's queue leaves it and
 * is never sent. One sent is left to end on its connection, its answer unheard: postgres.js's own
 * cancel opens a connection whose failure (the server away) would reject a promise nobody holds.
 * One a connection is being opened for is sent once it opens, unheard too: postgres.js leaves a
 * connection whose first query was cancelled opening for good, and after a failover every
 * connection of the pool would.
 */
function abandonQuery(query: PromiseLike<unknown>, error: Error): void {
  // postgres.js's own Query, whose state and settling its types do not declare.
  const internal = query as unknown as {
    state: unknown;
    cancelled: unknown;
    reject(error: Error): void;
    cancel(): void;
  };
  internal.reject(error);
  if (internal.state) return;
  internal.cancel();
  internal.cancelled = null;
}

/** How long a write refused for lack of space keeps /readyz at 503 after it. */
const DISK_FULL_HOLD_MS = 5000;
/** /readyz answers 503 when the database has not answered `select 1` within this. */
const READINESS_TIMEOUT_MS = 1500;
/**
 * The embedded database is reported not ready below this much free space in DATA_DIR: the next
 * write would likely fail.
 */
const MIN_FREE_BYTES = 8 * 1024 * 1024;

/** `query` settled within READINESS_TIMEOUT_MS: any failure, or the time running out, is an unavailability. */
async function probe(query: () => Promise<unknown>): Promise<DatabaseUnavailableError | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () => reject(new DatabaseUnavailableError(`database unreachable: no answer within ${READINESS_TIMEOUT_MS} ms`)),
      READINESS_TIMEOUT_MS,
    );
  });
  try {
    await Promise.race([query(), timeout]);
    return null;
  } catch (error) {
    return unavailability(error) ?? new DatabaseUnavailableError(`database unreachable: ${(error as Error).message}`);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * postgres.js as every statement reaches it: Drizzle's (drizzle.ts) and named ones, on the pool, in
 * a transaction or on dedicated connections. Every statement is named and kept prepared on its
 * connection: an unnamed statement with parameters costs postgres.js a describe round trip before
 * each execution, so the hot paths would wait on PostgreSQL twice per query (behind a transaction
 * pooler the connection's `prepare: false` overrides this: a statement prepared on one server would
 * be run on another). On the pool, each statement and transaction is counted while under way and
 * bounded by the deadline (`tracker`); inside a transaction it is null, the transaction being
 * counted whole.
 */
class PostgresSender implements StatementSender {
  constructor(
    private readonly sql: Sql | TransactionSql,
    private readonly tracker: QueryTracker | null,
    /** Inside a transaction: whether it was abandoned at the deadline, after which it sends nothing more. */
    private readonly abandoned: () => boolean = () => false,
  ) {}

  async send(text: string, params: unknown[], arrays: boolean): Promise<unknown[]> {
    if (this.abandoned()) throw ABANDONED_TRANSACTION;
    const query = this.sql.unsafe(text, params as Parameters, { prepare: true });
    // Every statement passes here: with tracing on, each is a span of the work that sends it.
    const sent = traceStatement(text, arrays ? query.values() : query);
    return this.tracker ? this.tracker.trackQuery(sent) : sent;
  }

  /**
   * Called on the pool's sender only. The transaction as a whole (the wait for its connection, its
   * statements, its commit) is bounded by the deadline; abandoned, it sends nothing more and rolls
   * back rather than commit, so an answered 503 never becomes a change later.
   */
  transaction<T>(modes: string, task: (tx: StatementSender) => Promise<T>): Promise<T> {
    const tracker = this.tracker!;
    let abandoned = false;
    const isAbandoned = () => abandoned;
    let abandon!: (error: Error) => void;
    const transaction = new Promise<T>((resolve, reject) => {
      abandon = reject;
      // Tried again whole after a conflict, within the same deadline.
      retryingConflicts(() =>
        (this.sql as Sql)
          // postgres.js calls the task when a connection is free, out of the caller's context: its
          // statements stay in the caller's span.
          .begin(
            modes,
            keepingActiveSpan(async (tx: TransactionSql) => {
              if (abandoned) throw ABANDONED_TRANSACTION;
              const result = await task(new PostgresSender(tx, null, isAbandoned));
              if (abandoned) throw ABANDONED_TRANSACTION;
              return result;
            }),
          ),
      ).then(resolve as (value: unknown) => void, reject);
    });
    return tracker.track(transaction, (error) => {
      abandoned = true;
      abandon(error);
    });
  }

  /** Called inside a transaction only. */
  savepoint<T>(task: (tx: StatementSender) => Promise<T>): Promise<T> {
    return (this.sql as TransactionSql).savepoint((tx) =>
      task(new PostgresSender(tx, null, this.abandoned)),
    ) as Promise<T>;
  }
}

/** How many times a unit of work rolled back for a conflict (isConflict) is sent in all. */
const CONFLICT_TRIES = 3;

/**
 * Runs `work`, a transaction or a statement outside one, again when PostgreSQL rolled it back for
 * a deadlock or a serialization failure: a conflict between two requests is no fault of either
 * caller, and answering it as an error would be a 500. Each try waits a little longer, at random,
 * so that the two sides of a deadlock do not meet again.
 */
async function retryingConflicts<T>(work: () => Promise<T>): Promise<T> {
  for (let tried = 1; ; tried++) {
    try {
      return await work();
    } catch (error) {
      if (tried >= CONFLICT_TRIES || !isConflict(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, tried * (5 + Math.random() * 20)));
    }
  }
}

/** What ends a transaction abandoned at the deadline: its caller has already been answered. */
const ABANDONED_TRANSACTION = new DatabaseUnavailableError('transaction abandoned at the request deadline');

interface DatabaseOptions {
  databaseUrl: string | null;
  /** Set when DATABASE_URL is a transaction pooler: PostgreSQL itself, for what needs a session. */
  databaseDirectUrl?: string | null;
  dataDir: string;
  poolSize?: number;
  /**
   * The longest wait for a pool connection and a statement (or a transaction) sent through `db`,
   * `executeSql` and dedicated connections (DATABASE_REQUEST_TIMEOUT_MS).
   */
  databaseRequestTimeoutMs?: number;
  /** Where the embedded server's messages go. */
  logger?: Logger;
}

/** The embedded server a handle runs, stopped when the handle closes. */
interface Embedded {
  dataDir: string;
  stop(): Promise<void>;
}

const silentLogger: Logger = { fatal() {}, error() {}, warn() {}, info() {}, debug() {}, trace() {} };

export async function openDatabase(options: DatabaseOptions): Promise<DatabaseHandle> {
  const pool = {
    size: options.poolSize ?? 10,
    deadlineMs: options.databaseRequestTimeoutMs ?? DEFAULT_DATABASE_REQUEST_TIMEOUT_MS,
  };
  if (options.databaseUrl) return openPostgres(options.databaseUrl, options.databaseDirectUrl ?? null, pool, null);
  const logger = options.logger ?? silentLogger;
  const server = await startEmbeddedServer(options.dataDir, logger).catch((error) => {
    // Out of space, the server fails on whichever file it writes first: say why.
    throw diskFullIn(options.dataDir) ?? error;
  });
  try {
    const handle = await openPostgres(server.url, null, pool, { dataDir: options.dataDir, stop: server.stop });
    const { pgliteDir } = server;
    if (pgliteDir) handle.movePgliteData = () => moveFromPglite(pgliteDir, server.url, logger);
    return handle;
  } catch (error) {
    await server.stop();
    throw error;
  }
}

/** A connection not made within this fails its queries: while the database is away, answers come fast. */
const CONNECT_TIMEOUT_SECONDS = 3;

const STARTUP_CONNECT_ATTEMPTS = 3;

/** The wait before listening again after a failed try, the server still away. */
const RELISTEN_DELAY_MS = 200;

/**
 * Seconds before connecting again after a failed connection. postgres.js waits up to 20 s after a
 * run of failures, and a query handed to a connection in that wait waits with it: callbacks hung
 * while PostgreSQL restarted. A short wait keeps every query within about the connect timeout.
 */
const reconnectDelaySeconds = (failures: number) => Math.min(0.05 * 2 ** failures, 0.5) * (0.5 + Math.random() / 2);

/** Connections to DATABASE_DIRECT_URL besides the listening ones: the advisory locks held and a migration. */
const SESSION_CONNECTIONS = 3;

/**
 * Has dates and times come as the text PostgreSQL sends, and JSON parameters go as the text they
 * are given in, on `sql`: Drizzle's columns and the named statements' callers convert them (Drizzle's
 * own postgres.js driver sets the same on its client).
 */
function keepingText(sql: Sql): Sql {
  const asIs = (value: unknown) => value;
  for (const type of [1082, 1083, 1114, 1115, 1182, 1184, 1185, 1231]) {
    sql.options.parsers[type] = asIs;
    sql.options.serializers[type] = asIs;
  }
  for (const type of [114, 3802]) sql.options.serializers[type] = asIs;
  return sql;
}

/**
 * Has the connections `sql` opens from now on skip postgres.js's fetch of the array types, once one
 * of them has fetched them (into the options they all share). postgres.js runs that fetch on every
 * new connection in a promise nobody holds, so that its failure ends the process: it fails whenever
 * the server goes away between the login and that first query, which a pooler makes the rule, as it
 * accepts logins while its server is down.
 */
function typesFetched(sql: Sql): void {
  (sql.options as { fetch_types: boolean }).fetch_types = false;
}

/**
 * Waits for the first answer of `sql`, a few connect timeouts at most (a start is no hot path: a
 * server slow to accept, busy or starting with us, gets them), then tells whether the session that
 * answered is a server's own: a pooler (PgBouncer) gives its clients a cancel key of its own, whose
 * process id is no backend's. `what` names the server in the error when it cannot be reached.
 */
async function answersWithOwnSession(sql: Sql, what: string): Promise<boolean> {
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        const answer = await sql.unsafe<{ pid: number }[]>('select pg_backend_pid() as pid');
        typesFetched(sql);
        return answer.state.pid === answer[0]!.pid;
      } catch (error) {
        if ((error as { code?: string }).code !== 'CONNECT_TIMEOUT' || attempt === STARTUP_CONNECT_ATTEMPTS)
          throw error;
      }
    }
  } catch (error) {
    await sql.end({ timeout: 1 }).catch(() => {});
    const reason = error instanceof Error ? error.message : String(error);
    throw new DatabaseUnavailableError(`cannot reach ${what}: ${reason}`);
  }
}

/**
 * Refused: a pooler in front of DATABASE_URL without DATABASE_DIRECT_URL. The cancel key tells a
 * pooler from a server but not a session pooler from a transaction pooler, whose clients' statements
 * land on any server: named statements, LISTEN and session locks would then break at random.
 */
const POOLER_WITHOUT_DIRECT_URL =
  'DATABASE_URL reaches PostgreSQL through a connection pooler (PgBouncer or the like): set DATABASE_DIRECT_URL ' +
  'to a URL of PostgreSQL itself (or of a session-mode pool), which the service uses for LISTEN, advisory locks ' +
  'and migrations, and statements through DATABASE_URL go unprepared (docs/deploy.md, Behind PgBouncer)';

async function openPostgres(
  databaseUrl: string,
  /** Set when `databaseUrl` is a transaction pooler: PostgreSQL itself. */
  directUrl: string | null,
  { size: poolSize, deadlineMs }: { size: number; deadlineMs: number },
  embedded: Embedded | null,
): Promise<DatabaseHandle> {
  const options = {
    connect_timeout: CONNECT_TIMEOUT_SECONDS,
    backoff: reconnectDelaySeconds,
    onnotice: () => {},
    // Money stays text: numeric is never parsed into a float.
    types: { numeric: { to: 1700, from: [1700], serialize: String, parse: String } },
  };
  const { url, ...connection } = postgresConnection(databaseUrl);
  // Behind a transaction pooler nothing is prepared: postgres.js's connection option wins over a query's.
  const poolOptions = { ...options, ...connection, prepare: directUrl === null };
  const client = keepingText(postgres(url, { ...poolOptions, max: poolSize }));
  const what = embedded ? 'the embedded PostgreSQL server' : `DATABASE_URL ${maskPassword(databaseUrl)}`;
  if (!(await answersWithOwnSession(client, what)) && directUrl === null) {
    await client.end({ timeout: 1 }).catch(() => {});
    throw new ConfigError(POOLER_WITHOUT_DIRECT_URL);
  }
  // What needs a session of its own connects here: the direct URL, or DATABASE_URL itself.
  const { url: sessionUrl, ...sessionConnection } =
    directUrl === null ? { url, ...connection } : postgresConnection(directUrl);
  let sessionClient = client;
  if (directUrl !== null) {
    sessionClient = keepingText(postgres(sessionUrl, { ...options, ...sessionConnection, max: SESSION_CONNECTIONS }));
    await answersWithOwnSession(sessionClient, `DATABASE_DIRECT_URL ${maskPassword(directUrl)}`).catch(
      async (error) => {
        await client.end({ timeout: 1 }).catch(() => {});
        throw error;
      },
    );
  }
  const inFlight = new QueryTracker(poolSize, deadlineMs);
  const pool = new PostgresSender(client, inFlight);
  const dedicated: Sql[] = sessionClient === client ? [] : [sessionClient];
  let ending = false;
  // Named statements go the way Drizzle's do: prepared, counted, bounded by the deadline.
  const runOn =
    (sender: StatementSender): RunStatement =>
    async (statement, params) =>
      // The caller's statement says what its rows are: the driver cannot.
      [...(await sender.send(statement.text, [...params], false))] as never[];
  /** A statement on its own, tried again after a conflict (inside a transaction, the transaction is). */
  const runAloneOn = (sender: StatementSender): RunStatement => {
    const run = runOn(sender);
    return (statement, params) => retryingConflicts(() => run(statement, params));
  };
  return {
    db: drizzleOn(pool),
    // Drizzle's own postgres.js driver, which the migrator is written for, on a connection of its
    // own to the session's server, whose lock_timeout bounds each wait for a table's lock.
    async migrate(folder, lockTimeoutMs) {
      const migrating = postgres(sessionUrl, {
        ...options,
        ...sessionConnection,
        max: 1,
        connection: { lock_timeout: lockTimeoutMs },
      });
      try {
        await migratePostgres(drizzlePostgres(migrating), { migrationsFolder: folder });
      } finally {
        await migrating.end({ timeout: 1 });
      }
    },
    run: runAloneOn(pool),
    transact: (task) => pool.transaction('', (tx) => task(runOn(tx))),
    async executeSql<Row>(text: string, values: unknown[] = []) {
      return { rows: [...(await inFlight.trackQuery(client.unsafe(text, values as Parameters)))] as Row[] };
    },
    driverTransaction<T>(options: string, task: (tx: TransactionSql) => Promise<T>) {
      return inFlight.track(client.begin(options, task) as Promise<T>);
    },
    dedicatedConnections(count) {
      const connections = keepingText(postgres(url, { ...poolOptions, max: count }));
      dedicated.push(connections);
      inFlight.size += count;
      const run = runAloneOn(new PostgresSender(connections, inFlight));
      const runThenSkipTypes: RunStatement = async (statement, params) => {
        const rows = await run(statement, params);
        typesFetched(connections);
        return rows;
      };
      return { size: count, deadlineMs, run: runThenSkipTypes };
    },
    async listen(channel, onNotify, onListen) {
      // A connection of its own, listening again each time it closes until it succeeds: postgres.js's
      // own `listen` tries once after a close and, the server still away (restarting, failing over),
      // stops listening for good.
      let closed = false;
      const listenerOptions = {
        ...options,
        ...sessionConnection,
        max: 1,
        max_lifetime: null,
        fetch_types: false,
        // postgres.js's own, undeclared in its types: every NOTIFY on the connection.
        onnotify: (to: string, payload: string) => to === channel && onNotify(payload),
        onclose: () => {
          closed = true;
          void listenAgain();
        },
      };
      const listening: Sql = postgres(sessionUrl, listenerOptions);
      dedicated.push(listening);
      const statement = `listen "${channel.replace(/"/g, '""')}"`;
      let retrying = false;
      const listenAgain = async () => {
        if (retrying || ending) return;
        retrying = true;
        while (closed && !ending) {
          closed = false;
          await listening.unsafe(statement).catch(async () => {
            closed = true;
            await new Promise((resolve) => setTimeout(resolve, RELISTEN_DELAY_MS));
          });
        }
        retrying = false;
        if (!ending) onListen();
      };
      await listening.unsafe(statement);
      onListen();
    },
    async withoutDeadline(task) {
      inFlight.deadlineLifted++;
      try {
        return await task();
      } finally {
        inFlight.deadlineLifted--;
      }
    },
    async withAdvisoryLock(key, task) {
      // A session-level lock lives on one connection: reserve it for the duration.
      const connection = await sessionClient.reserve();
      try {
        await connection`select pg_advisory_lock(${key})`;
        try {
          return await task();
        } finally {
          await connection`select pg_advisory_unlock(${key})`;
        }
      } finally {
        connection.release();
      }
    },
    async unavailable() {
      // A full disk first: the embedded server may be down for lack of space, and that is the reason.
      const diskFull = embedded && diskFullIn(embedded.dataDir);
      return diskFull || ((await probe(() => client`select 1`)) ?? inFlight.recentDiskFull());
    },
    poolStatistics: () => inFlight.statistics(),
    deadlinesExceeded: () => inFlight.deadlinesExceeded,
    deadlineMs,
    async close() {
      ending = true;
      try {
        await Promise.all([client, ...dedicated].map((each) => each.end({ timeout: 5 })));
      } finally {
        await embedded?.stop();
      }
    },
  };
}

/** DATA_DIR's device nearly full, as an unavailability, or null while it has room. */
function diskFullIn(dataDir: string): DatabaseUnavailableError | null {
  const { bavail, bsize } = statfsSync(dataDir);
  const free = bavail * bsize;
  if (free >= MIN_FREE_BYTES) return null;
  return new DatabaseUnavailableError(
    `disk full: ${Math.floor(free / 1024)} KiB free on the device of DATA_DIR ${dataDir}; free some space`,
    'disk_full',
  );
}
