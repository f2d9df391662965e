// One schema, two drivers: postgres.js against PostgreSQL when DATABASE_URL is set, PGlite
// (embedded PostgreSQL in DATA_DIR) when it is not. Everything above this file sees `Database`.
import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import type { ExtractTablesWithRelations } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { acquireDataDirLock } from './data-dir-lock.js';
import { DatabaseUnavailableError } from './errors.js';
import * as schema from './schema.js';

export type Schema = typeof schema;
export type Database = PgDatabase<PgQueryResultHKT, Schema>;
export type Transaction = PgTransaction<PgQueryResultHKT, Schema, ExtractTablesWithRelations<Schema>>;
/** Either the database or an open transaction: inside a transaction, pass the transaction. */
export type Executor = Database | Transaction;

export interface DatabaseHandle {
  db: Database;
  kind: 'postgres' | 'pglite';
  /** Runs raw SQL with $1.. parameters on the shared connection(s); the shape pg-boss expects. */
  executeSql(text: string, values?: unknown[]): Promise<{ rows: any[] }>;
  /**
   * Calls `onNotify` for every NOTIFY on `channel` from any process, and `onListen` each time the
   * listening (re)starts, when notifications may have been missed.
   */
  listen(channel: string, onNotify: (payload: string) => void, onListen: () => void): Promise<void>;
  /** Runs `task` while this process holds the PostgreSQL advisory lock `key`. */
  withAdvisoryLock<T>(key: number, task: () => Promise<T>): Promise<T>;
  ping(): Promise<void>;
  /** Connections (size), those busy with a query or transaction (inUse), and work waiting for one. */
  poolStatistics(): { size: number; inUse: number; waiting: number };
  close(): Promise<void>;
}

/** Queries and transactions under way, counted where they are sent: what neither driver reports. */
class InFlight {
  count = 0;

  constructor(private readonly size: number) {}

  statistics() {
    return { size: this.size, inUse: Math.min(this.count, this.size), waiting: Math.max(0, this.count - this.size) };
  }
}

/**
 * `target` with the methods named counted in `inFlight` from the moment their result is awaited
 * until it settles. postgres.js queries are lazy: they run when first awaited, and callers may
 * still chain `.values()` on them before, so the result itself is handed back, its `then` wrapped.
 */
function counting<T extends object>(target: T, methods: readonly string[], inFlight: InFlight): T {
  return new Proxy(target, {
    get(object, property) {
      const value = Reflect.get(object, property);
      if (typeof property !== 'string' || !methods.includes(property) || typeof value !== 'function') return value;
      return (...args: unknown[]) => countedWhenAwaited(value.apply(object, args), inFlight);
    },
  });
}

function countedWhenAwaited<R>(result: R, inFlight: InFlight): R {
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
        if (onRejected) return onRejected(error);
        throw error;
      },
    );
  } as typeof result.then;
  return result;
}

export { DatabaseUnavailableError };

interface DatabaseOptions {
  databaseUrl: string | null;
  dataDir: string;
  poolSize?: number;
}

export async function openDatabase(options: DatabaseOptions): Promise<DatabaseHandle> {
  return options.databaseUrl ? openPostgres(options.databaseUrl, options.poolSize ?? 10) : openPglite(options.dataDir);
}

/** The URL without its password, for messages. */
function describeDatabaseUrl(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  if (url.password) url.password = '***';
  return url.toString();
}

async function openPostgres(databaseUrl: string, poolSize: number): Promise<DatabaseHandle> {
  const client = postgres(databaseUrl, {
    max: poolSize,
    connect_timeout: 10,
    onnotice: () => {},
    // Money stays text: numeric is never parsed into a float.
    types: { numeric: { to: 1700, from: [1700], serialize: String, parse: String } },
  });
  try {
    await client`select 1`;
  } catch (error) {
    await client.end({ timeout: 1 }).catch(() => {});
    const reason = error instanceof Error ? error.message : String(error);
    throw new DatabaseUnavailableError(`cannot reach DATABASE_URL ${describeDatabaseUrl(databaseUrl)}: ${reason}`);
  }
  const inFlight = new InFlight(poolSize);
  const counted = counting(client, ['begin', 'unsafe'], inFlight);
  const db = drizzlePostgres(preparingStatements(counted), { schema }) as unknown as Database;
  return {
    db,
    kind: 'postgres',
    async executeSql(text, values = []) {
      const rows = await counted.unsafe(text, values as never[]);
      return { rows: [...rows] };
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
    async ping() {
      await client`select 1`;
    },
    poolStatistics: () => inFlight.statistics(),
    async close() {
      await client.end({ timeout: 5 });
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

/** Removes group and other permissions from everything below `dir`. */
function makePrivate(dir: string): void {
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const full = path.join(entry.parentPath, entry.name);
    const { mode } = lstatSync(full);
    if (!entry.isSymbolicLink() && (mode & 0o077) !== 0) chmodSync(full, mode & 0o700);
  }
}

async function openPglite(dataDir: string): Promise<DatabaseHandle> {
  // The database's files are the service's alone, whatever the umask it was started with: the
  // directory is 0700, and the files PGlite creates with explicit 0666 modes are made private
  // after it opens and as it closes.
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  chmodSync(dataDir, 0o700);
  // PGlite does not lock its directory; two processes on one directory corrupt it silently.
  const lock = acquireDataDirLock(dataDir);
  let pglite: PGlite;
  try {
    pglite = await PGlite.create(dataDir);
    makePrivate(dataDir);
  } catch (error) {
    lock.release();
    throw error;
  }
  // One connection: everything beyond the first piece of work in flight is waiting for it.
  const inFlight = new InFlight(1);
  const counted = counting(pglite, ['query', 'exec', 'transaction'], inFlight);
  const db = drizzlePglite(counted, { schema }) as unknown as Database;
  return {
    db,
    kind: 'pglite',
    async executeSql(text, values = []) {
      const result = await counted.query(text, values as any[]);
      return { rows: result.rows as any[] };
    },
    async listen(channel, onNotify, onListen) {
      await pglite.listen(channel, onNotify);
      onListen();
    },
    async withAdvisoryLock(_key, task) {
      // One process owns the directory (the lock file above) and PGlite has one connection:
      // there is nobody to exclude, and holding a lock on the only connection would not help.
      return task();
    },
    async ping() {
      await pglite.query('select 1');
    },
    poolStatistics: () => inFlight.statistics(),
    async close() {
      try {
        await pglite.close();
        makePrivate(dataDir);
      } finally {
        lock.release();
      }
    },
  };
}
