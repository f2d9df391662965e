// Drizzle's builder on the handle's one way to the database. Drizzle builds each statement's text
// and parameters; the handle's StatementSender (client.ts) sends it, as it sends every named
// statement: prepared on its connection, counted, bounded by the request deadline, traced.
// drizzle-orm/pg-proxy is Drizzle's own driver for such a sender; it has no transactions, so the
// session and transaction below add them, on the sender's.
import {
  createTableRelationsHelpers,
  type ExtractTablesWithRelations,
  extractTablesRelationalConfig,
  type RelationalSchemaConfig,
} from 'drizzle-orm';
import { PgDialect, type PgTransactionConfig } from 'drizzle-orm/pg-core';
import { PgProxyTransaction, PgRemoteDatabase, PgRemoteSession } from 'drizzle-orm/pg-proxy';
import * as schema from './schema.js';

export type Schema = typeof schema;
type Tables = ExtractTablesWithRelations<Schema>;
export type Database = PgRemoteDatabase<Schema>;
export type Transaction = PgProxyTransaction<Schema, Tables>;

/** Where every statement goes: the pool, or one transaction's connection. */
export interface StatementSender {
  /** Sends one statement; its rows come as objects, or with `arrays` as arrays of column values. */
  send(text: string, params: unknown[], arrays: boolean): Promise<unknown[]>;
  /** Runs `task` in a transaction opened with `modes` ('' or, say, 'isolation level serializable'). */
  transaction<T>(modes: string, task: (sender: StatementSender) => Promise<T>): Promise<T>;
  /** Inside a transaction: runs `task` in a savepoint, rolled back to if it fails. */
  savepoint<T>(task: (sender: StatementSender) => Promise<T>): Promise<T>;
}

/** The Drizzle database whose statements `sender` sends. */
export function drizzleOn(sender: StatementSender): Database {
  const dialect = new PgDialect();
  const { tables, tableNamesMap } = extractTablesRelationalConfig<Tables>(schema, createTableRelationsHelpers);
  const relations = { fullSchema: schema, schema: tables, tableNamesMap };
  return new PgRemoteDatabase(dialect, new SenderSession(sender, dialect, relations), relations);
}

class SenderSession extends PgRemoteSession<Schema, Tables> {
  constructor(
    readonly sender: StatementSender,
    dialect: PgDialect,
    private readonly relations: RelationalSchemaConfig<Tables>,
  ) {
    // Drizzle asks for rows as arrays ('all') when it maps them to its columns itself.
    super(
      (text, params, method) => sender.send(text, params, method === 'all').then((rows) => ({ rows })),
      dialect,
      relations,
    );
  }

  override transaction<T>(task: (tx: Transaction) => Promise<T>, config?: PgTransactionConfig): Promise<T> {
    return this.sender.transaction(transactionModes(config), (sender) => task(this.on(sender)));
  }

  /** A transaction of this session's database on `sender`, `nestedIndex` savepoints deep. */
  on(sender: StatementSender, nestedIndex = 0): Transaction {
    return new SenderTransaction(
      this.dialect,
      new SenderSession(sender, this.dialect, this.relations),
      this.relations,
      nestedIndex,
    );
  }
}

class SenderTransaction extends PgProxyTransaction<Schema, Tables> {
  constructor(
    dialect: PgDialect,
    private readonly senderSession: SenderSession,
    relations: RelationalSchemaConfig<Tables>,
    nestedIndex: number,
  ) {
    super(dialect, senderSession, relations, nestedIndex);
  }

  override transaction<T>(task: (tx: Transaction) => Promise<T>): Promise<T> {
    const { sender } = this.senderSession;
    return sender.savepoint((inner) => task(this.senderSession.on(inner, this.nestedIndex + 1)));
  }
}

/** What `begin` is given for Drizzle's transaction options: they open the transaction, not a statement after it. */
function transactionModes(config: PgTransactionConfig = {}): string {
  const modes: string[] = [];
  if (config.isolationLevel) modes.push(`isolation level ${config.isolationLevel}`);
  if (config.accessMode) modes.push(config.accessMode);
  if (config.deferrable !== undefined) modes.push(config.deferrable ? 'deferrable' : 'not deferrable');
  return modes.join(' ');
}
