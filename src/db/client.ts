// One driver, postgres.js, against the PostgreSQL server of DATABASE_URL when it is set, else
// against the embedded server the service runs in DATA_DIR (embedded-server.ts). Everything above
// this file sees `Database`.
import { statfsSync } from 'node:fs';
import type { ExtractTablesWithRelations } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import type { Logger } from '../logger.js';
import { startEmbeddedServer } from './embedded-server.js';
import { DatabaseUnavailableError, unavailability } from './errors.js';
import { moveFromPglite } from './pglite-move.js';
import * as schema from './schema.js';
import { postgresConnection } from './url.js';

export type Schema = typeof schema;
export type Database = PgDatabase<PgQueryResultHKT, Schema>;
export type Transaction = PgTransaction<PgQueryResultHKT, Schema, ExtractTablesWithRelations<Schema>>;
/** Either the database or an open transaction: inside a transaction, pass the transaction. */
export type Executor = Database | Transaction;

/** Rows of `db.execute`: postgres.js returns them as an array. */
export function rowsOf<T>(result: unknown): T[] {
  return result as T[];
}

export interface DatabaseHandle {
  db: Database;
  /**
   * Set while DATA_DIR holds PGlite data of an earlier release not yet moved to the embedded
   * server: migrateDatabase runs it once the migrations have made the schema.
   */
  movePgliteData?: () => Promise<void>;
  /** Runs raw SQL with $1.. parameters on the shared connection(s); the shape pg-boss expects. */
  executeSql(text: string, values?: unknown[]): Promise<{ rows: any[] }>;
  /**
   * `connections` of their own, apart from the pool, for the hottest statements (the payment
   * callback's). The pool hands out the connection idle the longest, so a statement sent through
   * it visits every backend in turn, each cold; a lane keeps to the same few, warm (measured:
   * callbacks at 73% of the pgbench ceiling on a fresh pool, 63% once all ten connections had been
   * opened). Closed with the handle.
   */
  lane(connections: number): StatementLane;
  /**
   * Calls `onNotify` for every NOTIFY on `channel` from any process, and `onListen` each time the
   * listening (re)starts, when notifications may have been missed.
   */
  listen(channel: string, onNotify: (payload: string) => void, onListen: () => void): Promise<void>;
  /** Runs `task` while this process holds the PostgreSQL advisory lock `key`. */
  withAdvisoryLock<T>(key: number, task: () => Promise<T>): Promise<T>;
  /**
   * Why the database cannot serve now (unreachable within READINESS_TIMEOUT_MS, or writes refused
   * for lack of space), or null when it can: what /readyz reports.
   */
  unavailable(): Promise<DatabaseUnavailableError | null>;
  /** Connections (size), those busy with a query or transaction (inUse), and work waiting for one. */
  poolStatistics(): { size: number; inUse: number; waiting: number };
  close(): Promise<void>;
}

export interface StatementLane {
  /** Its connections: statements under way at once. */
  size: number;
  /** The rows of one statement with $1.. parameters, kept prepared: Drizzle would build it again on every call. */
  query<T>(text: string, values: unknown[]): Promise<T[]>;
}

/**
 * Queries and transactions under way, counted where they are sent (what postgres.js does not report),
 * and the last one refused for lack of disk space.
 */
class QueryTracker {
  count = 0;
  private diskFull: { error: DatabaseUnavailableError; at: number } | null = null;

  /** Connections: the pool's and every lane's. */
  constructor(public size: number) {}

  statistics() {
    return { size: this.size, inUse: Math.min(this.count, this.size), waiting: Math.max(0, this.count - this.size) };
  }

  failed(error: unknown): void {
    const cause = unavailability(error);
    if (cause?.reason === 'disk_full') this.diskFull = { error: cause, at: Date.now() };
  }

  /** The disk-full failure of the last DISK_FULL_HOLD_MS, if any. */
  recentDiskFull(): DatabaseUnavailableError | null {
    return this.diskFull && Date.now() - this.diskFull.at < DISK_FULL_HOLD_MS ? this.diskFull.error : null;
  }
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
 * `target` with the methods named counted in `inFlight` from the moment their result is awaited
 * until it settles. postgres.js queries are lazy: they run when first awaited, and callers may
 * still chain `.values()` on them before, so the result itself is handed back, its `then` wrapped.
 */
function counting<T extends object>(target: T, methods: readonly string[], inFlight: QueryTracker): T {
  return new Proxy(target, {
    get(object, property) {
      const value = Reflect.get(object, property);
      if (typeof property !== 'string' || !methods.includes(property) || typeof value !== 'function') return value;
      return (...args: unknown[]) => countedWhenAwaited(value.apply(object, args), inFlight);
    },
  });
}

function countedWhenAwaited<R>(result: R, inFlight: QueryTracker): R {
  if (!(result instanceof Promise)) return result;
  const then = result.then;
  let counted = false;
  // biome-ignore lint/suspicious/noThenProperty: wrapping the query's own then is the point.
  result.then = function (this: Promise<unknown>, onFulfilled, onRejected) {
    if (counted) return then.call(this, onFulfilled, onRejected);
    counted = true;
    inFlight.count++;
    const settled = () => inFlight.count--;
    return then.call(
      this,
      (value) => {
        settled();
        return onFulfilled ? onFulfilled(value) : value;
      },
      (error) => {
        settled();
        inFlight.failed(error);
        if (onRejected) return onRejected(error);
        throw error;
      },
    );
  } as typeof result.then;
  return result;
}

interface DatabaseOptions {
  databaseUrl: string | null;
  dataDir: string;
  poolSize?: number;
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
  const poolSize = options.poolSize ?? 10;
  if (options.databaseUrl) return openPostgres(options.databaseUrl, poolSize, null);
  const logger = options.logger ?? silentLogger;
  const server = await startEmbeddedServer(options.dataDir, logger).catch((error) => {
    // Out of space, the server fails on whichever file it writes first: say why.
    throw diskFullIn(options.dataDir) ?? error;
  });
  try {
    const handle = await openPostgres(server.url, poolSize, { dataDir: options.dataDir, stop: server.stop });
    const { pgliteDir } = server;
    if (pgliteDir) handle.movePgliteData = () => moveFromPglite(pgliteDir, server.url, logger);
    return handle;
  } catch (error) {
    await server.stop();
    throw error;
  }
}

/** The URL without its password, for messages. */
function describeDatabaseUrl(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  if (url.password) url.password = '***';
  return url.toString();
}

/** A connection not made within this fails its queries: while the database is away, answers come fast. */
const CONNECT_TIMEOUT_SECONDS = 3;

const STARTUP_CONNECT_ATTEMPTS = 3;

/**
 * Seconds before connecting again after a failed connection. postgres.js waits up to 20 s after a
 * run of failures, and a query handed to a connection in that wait waits with it: callbacks hung
 * while PostgreSQL restarted. A short wait keeps every query within about the connect timeout.
 */
const reconnectDelaySeconds = (failures: number) => Math.min(0.05 * 2 ** failures, 0.5) * (0.5 + Math.random() / 2);

async function openPostgres(databaseUrl: string, poolSize: number, embedded: Embedded | null): Promise<DatabaseHandle> {
  const options = {
    connect_timeout: CONNECT_TIMEOUT_SECONDS,
    backoff: reconnectDelaySeconds,
    onnotice: () => {},
    // Money stays text: numeric is never parsed into a float.
    types: { numeric: { to: 1700, from: [1700], serialize: String, parse: String } },
  };
  const connection = postgresConnection(databaseUrl);
  const client = postgres(connection.url, { ...options, path: connection.path, max: poolSize });
  const lanes: postgres.Sql<{ numeric: string }>[] = [];
  try {
    // A start is no hot path: a server slow to accept (busy, or starting with us) gets a few connect timeouts.
    for (let attempt = 1; ; attempt++) {
      try {
        await client`select 1`;
        break;
      } catch (error) {
        if ((error as { code?: string }).code !== 'CONNECT_TIMEOUT' || attempt === STARTUP_CONNECT_ATTEMPTS)
          throw error;
      }
    }
  } catch (error) {
    await client.end({ timeout: 1 }).catch(() => {});
    const reason = error instanceof Error ? error.message : String(error);
    const what = embedded ? 'the embedded PostgreSQL server' : `DATABASE_URL ${describeDatabaseUrl(databaseUrl)}`;
    throw new DatabaseUnavailableError(`cannot reach ${what}: ${reason}`);
  }
  const inFlight = new QueryTracker(poolSize);
  const counted = counting(client, ['begin', 'unsafe'], inFlight);
  const db = drizzlePostgres(preparingStatements(counted), { schema }) as unknown as Database;
  return {
    db,
    async executeSql(text, values = []) {
      const rows = await counted.unsafe(text, values as never[]);
      return { rows: [...rows] };
    },
    lane(connections) {
      const lane = postgres(connection.url, { ...options, path: connection.path, max: connections });
      // JSON parameters go as the text they are given in, as on the pool, where Drizzle sets the same.
      for (const type of [114, 3802]) lane.options.serializers[type] = (text: string) => text;
      lanes.push(lane);
      inFlight.size += connections;
      const countedLane = counting(lane, ['unsafe'], inFlight);
      return {
        size: connections,
        async query<T>(text: string, values: unknown[]) {
          return (await countedLane.unsafe(text, values as never[], { prepare: true })) as unknown as T[];
        },
      };
    },
    async listen(channel, onNotify, onListen) {
      // postgres.js listens on a connection of its own and listens again after a reconnect.
      await client.listen(channel, onNotify, onListen);
    },
    async withAdvisoryLock(key, task) {
      // A session-level lock lives on one connection: reserve it for the duration.
      const connection = await client.reserve();
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
    async close() {
      try {
        await Promise.all([client, ...lanes].map((each) => each.end({ timeout: 5 })));
      } finally {
        await embedded?.stop();
      }
    },
  };
}

/**
 * The client as Drizzle should see it: every statement named and kept prepared on its connection.
 * Drizzle sends unnamed statements unless a query is built with `.prepare(name)`, and an unnamed
 * statement with parameters costs postgres.js a describe round trip before each execution: the
 * hot paths would wait on PostgreSQL twice per query. Transactions get the same treatment.
 */
function preparingStatements<T extends postgres.Sql | postgres.TransactionSql>(sql: T): T {
  return new Proxy(sql, {
    get(target, property) {
      if (property === 'unsafe') {
        return (query: string, parameters?: never[], options?: postgres.UnsafeQueryOptions) =>
          target.unsafe(query, parameters, { ...options, prepare: true });
      }
      if (property === 'begin') {
        return (...args: unknown[]) => {
          const transaction = args.pop() as (tx: postgres.TransactionSql) => unknown;
          return (target as postgres.Sql).begin(...(args as []), (tx) => transaction(preparingStatements(tx)));
        };
      }
      return Reflect.get(target, property);
    },
  });
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
