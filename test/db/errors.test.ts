// What counts as the database being unavailable (a 503) rather than an error of the statement (a 500).
import { describe, expect, it } from 'vitest';
import { DatabaseUnavailableError, unavailability } from '../../src/db/errors.js';

describe('unavailability', () => {
  it("takes PgBouncer's own refusals for an unavailable database: 08P01 FATAL without a routine", () => {
    // As postgres.js reports what PgBouncer sends while its server is away: a severity and no more.
    const refusal = Object.assign(new Error('server login has been failing, try again later (server_login_retry)'), {
      code: '08P01',
      severity_local: 'FATAL',
    });
    expect(unavailability(refusal)).toBeInstanceOf(DatabaseUnavailableError);
    expect(unavailability(new Error('Failed query', { cause: refusal }))?.message).toBe(
      'database unreachable: server login has been failing, try again later (server_login_retry)',
    );
  });

  it("leaves PostgreSQL's own protocol violations to be errors: they name the routine", () => {
    const violation = Object.assign(
      new Error('bind message supplies 1 parameters, but prepared statement requires 2'),
      {
        code: '08P01',
        severity_local: 'ERROR',
        severity: 'ERROR',
        routine: 'exec_bind_message',
      },
    );
    expect(unavailability(violation)).toBe(null);
    expect(unavailability(Object.assign(violation, { severity_local: 'FATAL', severity: 'FATAL' }))).toBe(null);
  });
});
