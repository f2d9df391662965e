// Starts the service: database, migrations and first-start data under one lock, then the
// listeners of DECISIONS §1, then background workers. `close()` undoes it in reverse order.
import type { FastifyBaseLogger } from 'fastify';
import type { Config, ListenerName } from './config.js';
import type { AppContext } from './context.js';
import { openDatabase } from './db/client.js';
import { migrateDatabase } from './db/migrate.js';
import { buildAdminApp } from './http/admin/app.js';
import { buildBackendApp } from './http/backend/app.js';
import type { HostApp } from './http/host.js';
import { buildIntegrationsApp } from './http/integrations/app.js';
import { seedEmptyDatabase } from './seed.js';
import { secretBoxFor } from './tenants/secret-box.js';

const HOST_BUILDERS: Record<ListenerName, (context: AppContext, logger: FastifyBaseLogger) => Promise<HostApp>> = {
  integrations: buildIntegrationsApp,
  backend: buildBackendApp,
  admin: buildAdminApp,
};

export interface RunningService {
  context: AppContext;
  apps: Partial<Record<ListenerName, HostApp>>;
  /** Base URL of each started listener, e.g. `http://127.0.0.1:8080`. */
  urls: Partial<Record<ListenerName, string>>;
  close(): Promise<void>;
}

export async function openContext(config: Config): Promise<AppContext> {
  const database = await openDatabase(config);
  return { config, database, db: database.db, secretBox: secretBoxFor(config.secretEncryptionKey, config.dataDir) };
}

export async function startService(config: Config, logger: FastifyBaseLogger): Promise<RunningService> {
  const context = await openContext(config);
  const apps: RunningService['apps'] = {};
  const urls: RunningService['urls'] = {};
  const close = async () => {
    // Stop accepting and finish in-flight requests first, then let go of the database.
    await Promise.all(Object.values(apps).map((app) => app.close()));
    await context.database.close();
  };
  try {
    await migrateDatabase(context.database, () => seedEmptyDatabase(context, logger));
    for (const [name, listener] of Object.entries(config.listeners) as [ListenerName, { host: string; port: number }][]) {
      const app = await HOST_BUILDERS[name](context, logger);
      apps[name] = app;
      await app.listen({ host: listener.host, port: listener.port });
      const address = app.server.address();
      const port = typeof address === 'object' && address ? address.port : listener.port;
      const host = listener.host === '0.0.0.0' || listener.host === '::' ? '127.0.0.1' : listener.host;
      urls[name] = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
      logger.info({ listener: name, host: listener.host, port }, `${name} listener on ${urls[name]}`);
    }
  } catch (error) {
    await close().catch(() => {});
    throw error;
  }
  if (config.adminTokenGenerated && config.listeners.admin) {
    logger.warn({ admin_token: config.adminToken }, 'ADMIN_TOKEN not set: generated one for this run');
  }
  return { context, apps, urls, close };
}
