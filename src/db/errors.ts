/** PostgreSQL's SQLSTATE of a failed query, through Drizzle's wrapping, on both drivers. */
export function sqlState(error: unknown): string | undefined {
  for (let current: any = error; current; current = current.cause) {
    if (typeof current.code === 'string' && /^[0-9A-Z]{5}$/.test(current.code)) return current.code;
  }
  return undefined;
}

export const isUniqueViolation = (error: unknown) => sqlState(error) === '23505';

/** The database cannot be reached or opened (a readable start-up failure, not a bug). */
export class DatabaseUnavailableError extends Error {}
