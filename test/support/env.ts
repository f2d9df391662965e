import type { DatabaseTarget } from './database.js';

export const TEST_ADMIN_TOKEN = 'test-admin-token-0123456789abcdef0123';

/** The environment a test service runs with: every listener on a free loopback port. */
export function testEnv(target: DatabaseTarget, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    HOST: '127.0.0.1',
    ADMIN_HOST: '127.0.0.1',
    INTEGRATIONS_PORT: '0',
    BACKEND_PORT: '0',
    ADMIN_PORT: '0',
    PORTAL_PORT: '0',
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    LOG_LEVEL: 'silent',
    LOG_FORMAT: 'json',
    // Off unless a test is about them: suites send many requests, and many bad keys, from one address.
    RATE_LIMIT_PER_MINUTE: '0',
    RATE_LIMIT_TEST_INVOICES_PER_MINUTE: '0',
    RATE_LIMIT_PINGS_PER_MINUTE: '0',
    AUTH_FAILURE_LIMIT_PER_MINUTE: '0',
    ALLOW_PRIVATE_PAYMENT_ENDPOINTS: 'true',
    SECRET_ENCRYPTION_KEY: '00'.repeat(32),
    ...(target.databaseUrl ? { DATABASE_URL: target.databaseUrl } : { DATA_DIR: target.dataDir! }),
    ...overrides,
  };
}
