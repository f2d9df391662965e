/** The fields read of a thrown value and of its causes: any may be missing, as anything can be thrown. */
interface Thrown {
  code?: unknown;
  /** postgres.js's name of the severity a server sends (a pooler sends no other). */
  severity_local?: unknown;
  routine?: unknown;
  message?: unknown;
  cause?: unknown;
}

/** PostgreSQL's SQLSTATE of a failed query, through Drizzle's wrapping, on both drivers. */
export function sqlState(error: unknown): string | undefined {
  for (let current = error as Thrown | undefined; current; current = current.cause as Thrown | undefined) {
    if (typeof current.code === 'string' && /^[0-9A-Z]{5}$/.test(current.code)) return current.code;
  }
  return undefined;
}

export const isUniqueViolation = (error: unknown) => sqlState(error) === '23505';

/**
 * A deadlock (40P01) or a serialization failure (40001): PostgreSQL rolled the statement or the
 * transaction back whole, and the same work sent again may succeed.
 */
export const isConflict = (error: unknown) => ['40P01', '40001'].includes(sqlState(error) ?? '');

/**
 * The database cannot be reached or cannot take the work just now: a failure of the connection
 * or of the server's resources, never of the statement. Retrying later may succeed.
 */
export class DatabaseUnavailableError extends Error {
  constructor(
    message: string,
    /** `disk_full` or `unreachable`: what operators and /readyz are told. */
    readonly reason: 'disk_full' | 'unreachable' = 'unreachable',
  ) {
    super(message);
    this.name = 'DatabaseUnavailableError';
  }
}

/**
 * Driver and socket codes of a connection lost, refused or never made (postgres.js and Node).
 * ENOENT: a Unix socket that is not there, as the embedded server leaves it once stopped.
 */
const CONNECTION_CODES = new Set([
  'CONNECT_TIMEOUT',
  'ENOENT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);

// SQLSTATE: the connection exceptions of class 08 (not 08P01, a protocol violation: a bug of ours);
// class 57, an operator's or the server's intervention: the statement cancelled (57014, as a
// `systemctl stop` signalling every backend or `pg_cancel_backend` does; the service itself never
// cancels a statement it sent), the server shutting down, crashed or starting (57P01-57P03), the
// database dropped, the session timed out; 53 insufficient resources (53100 disk full, 53200 out
// of memory, 53300 too many connections).
const UNAVAILABLE_STATE = /^(0800[01346]|57...|53...)$/;

/**
 * A pooler's own refusal, ending the connection: PgBouncer says 08P01 FATAL for a server it cannot
 * reach or lost ("server login has been failing", "server conn crashed?"), without the source
 * routine PostgreSQL names in each of its errors.
 */
const isPoolerRefusal = (error: Thrown) =>
  error.code === '08P01' && error.severity_local === 'FATAL' && error.routine === undefined;

/** Why `error` means the database is unavailable, or null when it is an error of the statement. */
export function unavailability(error: unknown): DatabaseUnavailableError | null {
  for (let current = error as Thrown | undefined; current; current = current.cause as Thrown | undefined) {
    if (current instanceof DatabaseUnavailableError) return current;
    const code = typeof current.code === 'string' ? current.code : '';
    if (code === '53100' || code === 'ENOSPC') {
      return new DatabaseUnavailableError(`disk full: ${current.message}`, 'disk_full');
    }
    if (CONNECTION_CODES.has(code) || UNAVAILABLE_STATE.test(code) || isPoolerRefusal(current)) {
      return new DatabaseUnavailableError(`database unreachable: ${current.message}`);
    }
  }
  return null;
}
