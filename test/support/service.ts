// A whole service, listeners and payment worker included, on a fresh copy of the run's template
// database: for tests about processes, listeners or delivery. apps.ts has cheaper fixtures.
import type { FastifyBaseLogger } from 'fastify';
import { inject } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { type RunningService, startService } from '../../src/server.js';
import {
  adminRequests,
  madeBeforeAll,
  type OptionsWhenStarted,
  optionsNow,
  type TestApps,
  type TestAppsOptions,
  type TestTenant,
  uniqueSlug,
} from './apps.js';
import { copyTemplateDatabase } from './database.js';
import { testEnv } from './env.js';

/** A test service offers what the in-process fixtures of apps.ts offer, plus listeners and the worker. */
export interface TestService extends RunningService, TestApps {}

export async function startTestService(
  env: Record<string, string> = {},
  logger: FastifyBaseLogger = createLogger('silent'),
): Promise<TestService> {
  const database = await copyTemplateDatabase(inject('databaseTemplate'));
  const config = loadConfig(testEnv(database.target, env));
  const service = await startService(config, logger);
  const admin = adminRequests(service.apps.admin);
  return {
    ...service,
    database,
    admin,
    async createTenant(fields = {}) {
      const slug = uniqueSlug();
      const response = await admin('POST', '/tenants', { name: `Tenant ${slug}`, slug, gateway: 'tap', ...fields });
      if (response.statusCode !== 201) throw new Error(`tenant not created: ${response.statusCode} ${response.body}`);
      return response.json<TestTenant>();
    },
    async stop() {
      await service.close();
      await database.drop();
    },
  };
}

export type TestServiceOptions = Omit<TestAppsOptions, 'listen'>;

/**
 * A whole service (startTestService) for the tests of the enclosing file or `describe` block:
 * started before them, stopped and its database dropped after them.
 */
export function useService(options: OptionsWhenStarted<TestServiceOptions> = {}): TestService {
  return madeBeforeAll(
    () => {
      const { env, logger } = optionsNow(options);
      return startTestService(env, logger);
    },
    (service) => service.stop(),
  );
}

export type { TestTenant };
