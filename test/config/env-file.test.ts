// Operators may keep configuration in a .env file (ENV_FILE); the environment wins over it.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, environmentWithFile, loadConfig } from '../../src/config.js';

function envFile(text: string): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'pi-env-')), 'service.env');
  writeFileSync(file, text);
  return file;
}

describe('ENV_FILE', () => {
  it('reads the file under the environment: a variable set in both comes from the environment', () => {
    const file = envFile('RATE_LIMIT_PER_MINUTE=77\nLOG_LEVEL=debug\n# a comment\nTRUST_PROXY="10.0.0.1, 10.0.0.2"\n');
    const config = loadConfig(environmentWithFile({ ENV_FILE: file, LOG_LEVEL: 'warn' }), false);
    expect(config.rateLimitPerMinute).toBe(77);
    expect(config.logLevel).toBe('warn');
    expect(config.trustProxy).toEqual(['10.0.0.1', '10.0.0.2']);
  });

  it('stops at a line that is not NAME=value, which would take the next variable with it', () => {
    const file = envFile('A="two\nlines"\nGARBAGE LINE\nINTEGRATIONS_PORT=28280\n');
    expect(() => environmentWithFile({ ENV_FILE: file })).toThrow(
      new ConfigError(`ENV_FILE ${file}: "GARBAGE LINE" is not a NAME=value line`),
    );
  });

  it('is optional by default, required when named', () => {
    expect(environmentWithFile({ ENV_FILE: '' })).toEqual({ ENV_FILE: '' });
    expect(() => environmentWithFile({ ENV_FILE: '/nonexistent/service.env' })).toThrow(ConfigError);
  });
});

describe('observability settings', () => {
  it('logs JSON lines unless asked, pretty by default on a terminal', () => {
    expect(loadConfig({}, false).logFormat).toBe('json');
    expect(loadConfig({}, true).logFormat).toBe('pretty');
    expect(loadConfig({ LOG_FORMAT: 'json' }, true).logFormat).toBe('json');
    expect(() => loadConfig({ LOG_FORMAT: 'xml' }, false)).toThrow('LOG_FORMAT must be json or pretty, got "xml"');
  });

  it('has documented rate-limit defaults; 0 disables; bad values stop the start', () => {
    const defaults = loadConfig({}, false);
    expect(defaults).toMatchObject({ rateLimitPerMinute: 1200, authFailureLimitPerMinute: 30, redisUrl: null });
    expect(defaults.trustProxy).toBe(false);
    expect(loadConfig({ RATE_LIMIT_PER_MINUTE: '0' }, false).rateLimitPerMinute).toBe(0);
    expect(() => loadConfig({ AUTH_FAILURE_LIMIT_PER_MINUTE: '-1' }, false)).toThrow(ConfigError);
    expect(() => loadConfig({ REDIS_URL: 'http://x' }, false)).toThrow('REDIS_URL must be a redis: or rediss: URL');
  });

  it('bounds what a request waits for the database: 5 s by default, whole milliseconds from 100 to 60000', () => {
    expect(loadConfig({}, false).databaseRequestTimeoutMs).toBe(5000);
    expect(loadConfig({ DATABASE_REQUEST_TIMEOUT_MS: '1000' }, false).databaseRequestTimeoutMs).toBe(1000);
    for (const bad of ['0', '99', '60001', '1.5', '5s']) {
      expect(() => loadConfig({ DATABASE_REQUEST_TIMEOUT_MS: bad }, false)).toThrow(
        `DATABASE_REQUEST_TIMEOUT_MS must be a whole number of milliseconds from 100 to 60000, got "${bad}"`,
      );
    }
  });
});
