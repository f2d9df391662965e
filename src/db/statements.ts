// Named, typed statements: the SQL Drizzle does not express (a stored function's call, a
// statement of several writes), each written once beside its domain as a constant of this type,
// which says what it takes and what its rows are. They run through the handle (`run`,
// `transact`), kept prepared on their connection.

/** A statement with `$1`.. parameters of types `Params`, whose rows are `Row`. */
export interface Statement<Params extends readonly unknown[], Row> {
  readonly text: string;
  /** Never set: it carries the types of the parameters and rows. */
  readonly types?: { params: Params; row: Row };
}

export function statement<Params extends readonly unknown[], Row>(text: string): Statement<Params, Row> {
  return { text };
}

/** Runs one statement with its parameters: on the pool, or inside the transaction it was given by. */
export type RunStatement = <Params extends readonly unknown[], Row>(
  statement: Statement<Params, Row>,
  params: Params,
) => Promise<Row[]>;
