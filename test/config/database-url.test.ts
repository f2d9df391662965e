// DATABASE_URL may name several hosts (DECISIONS section 11): accepted as libpq reads it, and what
// postgres.js is asked to connect with.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { postgresConnection } from '../../src/db/url.js';

const SEVERAL = 'postgres://u:secret@h1:5432,h2:5433/partners';

describe('DATABASE_URL with several hosts', () => {
  it('is accepted as given', () => {
    expect(loadConfig({ DATABASE_URL: SEVERAL }, false).databaseUrl).toBe(SEVERAL);
  });

  it('connects only to a server out of recovery unless the URL asks otherwise', () => {
    expect(postgresConnection(SEVERAL)).toEqual({ url: SEVERAL, target_session_attrs: 'primary' });
    const readWrite = `${SEVERAL}?target_session_attrs=read-write`;
    expect(postgresConnection(readWrite)).toEqual({ url: readWrite, target_session_attrs: 'primary' });
    const anyStandby = `${SEVERAL}?target_session_attrs=prefer-standby`;
    expect(postgresConnection(anyStandby)).toEqual({ url: anyStandby });
    expect(postgresConnection('postgres://u@h1:5432/partners')).toEqual({ url: 'postgres://u@h1:5432/partners' });
  });

  it('refuses a target_session_attrs the driver does not know, and a malformed host, without the password', () => {
    expect(() => loadConfig({ DATABASE_URL: `${SEVERAL}?target_session_attrs=any` }, false)).toThrow(
      new ConfigError(
        `DATABASE_URL's target_session_attrs must be one of read-write, read-only, primary, standby, prefer-standby, got "any"`,
      ),
    );
    expect(() => loadConfig({ DATABASE_URL: 'postgres://u:secret@h1:5432,h2:x/partners' }, false)).toThrow(
      'DATABASE_URL must be a URL, got "postgres://u:***@h1:5432,h2:x/partners"',
    );
  });
});

describe('DATABASE_DIRECT_URL', () => {
  it('is taken beside DATABASE_URL, and may name several hosts too', () => {
    const config = loadConfig(
      { DATABASE_URL: 'postgres://u@pgbouncer:6432/partners', DATABASE_DIRECT_URL: SEVERAL },
      false,
    );
    expect(config.databaseDirectUrl).toBe(SEVERAL);
    expect(loadConfig({ DATABASE_URL: SEVERAL }, false).databaseDirectUrl).toBe(null);
  });

  it('is refused without DATABASE_URL, and when malformed, without the password', () => {
    expect(() => loadConfig({ DATABASE_DIRECT_URL: SEVERAL }, false)).toThrow(
      'DATABASE_DIRECT_URL needs DATABASE_URL: it names PostgreSQL itself beside the pooler of DATABASE_URL',
    );
    expect(() =>
      loadConfig({ DATABASE_URL: SEVERAL, DATABASE_DIRECT_URL: 'postgres://u:secret@h1:5432,h2:x/partners' }, false),
    ).toThrow('DATABASE_DIRECT_URL must be a URL, got "postgres://u:***@h1:5432,h2:x/partners"');
    expect(() =>
      loadConfig({ DATABASE_URL: SEVERAL, DATABASE_DIRECT_URL: `${SEVERAL}?target_session_attrs=any` }, false),
    ).toThrow(`DATABASE_DIRECT_URL's target_session_attrs must be one of`);
  });
});
