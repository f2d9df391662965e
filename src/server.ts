// Starts the service: database, migrations and first-start data under one lock, then the
// listeners of DECISIONS §1, then background workers. `close()` undoes it in reverse order.
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import type { FastifyBaseLogger } from 'fastify';
import { Redis } from 'ioredis';
import { CACHE_INVALIDATION_CHANNEL, Caches } from './cache.js';
import {
  adminTokenFile,
  type Config,
  ConfigError,
  DEFAULT_PORTS,
  type ListenerConfig,
  type ListenerName,
} from './config.js';
import { type AppContext, signingDependencies } from './context.js';
import { openDatabase } from './db/client.js';
import { migrateDatabase } from './db/migrate.js';
import { buildAdminApp } from './http/admin/app.js';
import { buildBackendApp } from './http/backend/app.js';
import { backendDocument } from './http/backend/openapi.js';
import { HeldPort } from './http/held-port.js';
import { type HostApp, listenerUrl } from './http/host.js';
import { buildIntegrationsApp } from './http/integrations/app.js';
import { integrationsDocument } from './http/integrations/openapi.js';
import { PAYMENT_CALLBACK_PATH } from './http/integrations/payment-callback.js';
import { buildPortalApp } from './http/portal/app.js';
import { documentFromRoutes } from './http/route.js';
import { retentionRules, schedulePrune } from './maintenance/index.js';
import { Metrics } from './metrics.js';
import {
  type AttemptReport,
  DEFAULT_RETRY_POLICY,
  deliver,
  failingEndpoints,
  PaymentRequests,
  PaymentWorker,
  REQUEST_TIMEOUT_MS,
  type RetryPolicy,
} from './payments/index.js';
import { RateLimitStore, REDIS_COMMAND_TIMEOUT_MS } from './rate-limit-store.js';
import { seedEmptyDatabase } from './seed.js';
import { countUnopenableSecrets, keyFilePath, secretBoxFor } from './tenants/index.js';
import { startTracing, stopTracing } from './tracing.js';

/** Builds each host's app on a context; tests build only the hosts they need with these. */
export const HOST_BUILDERS: Record<ListenerName, (context: AppContext, logger: FastifyBaseLogger) => Promise<HostApp>> =
  {
    integrations: buildIntegrationsApp,
    backend: buildBackendApp,
    admin: (context, logger) =>
      buildAdminApp(context, logger, {
        documents: {
          integrations: () => documentFromRoutes(integrationsDocument(() => context.publicUrls.integrations)),
          backend: () => documentFromRoutes(backendDocument(() => context.publicUrls.backend)),
        },
      }),
    portal: (context, logger) =>
      buildPortalApp(context, logger, { notifyUrl: `${context.publicUrls.integrations}${PAYMENT_CALLBACK_PATH}` }),
  };

export interface RunningService {
  context: AppContext;
  apps: Partial<Record<ListenerName, HostApp>>;
  /** Base URL of each started listener, e.g. `http://127.0.0.1:8080`. */
  urls: Partial<Record<ListenerName, string>>;
  close(): Promise<void>;
}

/**
 * The base URL of a listener, from its configuration as `listenerUrl` makes it from the socket:
 * loopback for "every address" (and for localhost), an IPv6 address in brackets.
 */
function listenerBaseUrl({ host, port }: ListenerConfig): string {
  const address = ['0.0.0.0', '::', 'localhost'].includes(host) ? '127.0.0.1' : host;
  return `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
}

/**
 * Where partners reach `name`: its public URL when configured, else its listener here, or as
 * configured when another process runs it (its default port's when that is 0: chosen there).
 */
function publicUrl(config: Config, name: 'integrations' | 'backend' | 'portal', configured: string | null): string {
  const elsewhere = config.configuredListeners[name];
  return (
    configured ??
    listenerBaseUrl(
      config.listeners[name] ?? {
        host: '127.0.0.1',
        port: elsewhere.port === 0 ? DEFAULT_PORTS[name] : elsewhere.port,
      },
    )
  );
}

/**
 * Each listener configured with port 0 on a port held for it (HeldPort), and `config` with those
 * ports: the public URLs follow from them before anything is built.
 */
async function holdFreePorts(config: Config) {
  const listeners: Config['listeners'] = {};
  const held: Partial<Record<ListenerName, HeldPort>> = {};
  for (const [name, listener] of Object.entries(config.listeners) as [ListenerName, ListenerConfig][]) {
    if (listener.port === 0) held[name] = await HeldPort.on(listener.host);
    listeners[name] = { ...listener, port: held[name]?.port ?? listener.port };
  }
  return { config: { ...config, listeners }, held };
}

/**
 * The context every host and worker of a process is given, complete: nothing in it changes once
 * opened. A serving process (startService) also shares the rate-limit counters in Redis when
 * REDIS_URL is set; its logger hears of the database and of Redis.
 */
export async function openContext(config: Config, serving?: { logger: FastifyBaseLogger }): Promise<AppContext> {
  const logger = serving?.logger;
  const database = await openDatabase({ ...config, logger });
  const caches = new Caches();
  const metrics = new Metrics({
    paymentBacklog: () => paymentQueue.backlog(),
    openBreakers: async () => (await failingEndpoints(database.db)).length,
    databasePool: () => database.poolStatistics(),
    databaseDeadlinesExceeded: () => database.deadlinesExceeded(),
    ready: async () => (await database.unavailable()) === null,
    cacheStatistics: () => caches.statistics(),
  });
  const paymentQueue = new PaymentRequests(database, (mode) =>
    metrics.paymentRequestAttempts.inc({ outcome: 'failed', mode }),
  );
  return {
    config,
    database,
    db: database.db,
    caches,
    secretBox: secretBoxFor(config.secretEncryptionKey, config.previousSecretEncryptionKeys, config.dataDir),
    paymentQueue,
    publicUrls: {
      integrations: publicUrl(config, 'integrations', config.integrationsPublicUrl),
      backend: publicUrl(config, 'backend', config.backendPublicUrl),
      portal: publicUrl(config, 'portal', config.portalPublicUrl),
    },
    metrics,
    rateLimitStore: serving && config.redisUrl ? connectRedis(config.redisUrl, metrics, serving.logger) : null,
  };
}

/**
 * Redis for the rate limits, when configured: commands fail fast rather than queue while it is
 * down, and time out rather than wait while it hangs.
 */
function connectRedis(url: string, metrics: Metrics, logger: FastifyBaseLogger): RateLimitStore {
  const redis = new Redis(url, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    lazyConnect: false,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
  });
  redis.on('error', (error) => logger.warn({ err: error }, 'Redis unavailable: rate limits counted in this process'));
  return new RateLimitStore(redis, metrics, logger);
}

/**
 * Runs the payment request worker. `notify_url` is the integrations host's public URL
 * (INTEGRATIONS_PUBLIC_URL, else its loopback address: local use only).
 */
async function startPaymentWorker(
  context: AppContext,
  logger: FastifyBaseLogger,
  retryPolicy: RetryPolicy,
): Promise<PaymentWorker> {
  const { config } = context;
  const base = context.publicUrls.integrations;
  if (!config.integrationsPublicUrl) {
    logger.warn({ notify_base: base }, 'INTEGRATIONS_PUBLIC_URL not set: payment requests carry a local notify_url');
  }
  const { metrics } = context;
  const log = logger.child({ worker: 'payment-request' });
  const deps = {
    ...signingDependencies(context),
    database: context.database,
    requests: context.paymentQueue,
    notifyUrl: `${base}${PAYMENT_CALLBACK_PATH}`,
    retryPolicy,
    breakerPolicy: {
      failures: config.paymentBreakerFailures,
      coolDownSeconds: config.paymentBreakerCoolDownSeconds,
      maxCoolDownSeconds: BREAKER_MAX_COOL_DOWN_SECONDS,
    },
    log,
    onAttempt: (report: AttemptReport) => {
      metrics.paymentRequestAttempts.inc({ outcome: report.result, mode: report.mode });
      metrics.paymentRequestDuration.observe({ kind: report.kind, mode: report.mode }, report.durationSeconds);
      if (report.waitedSeconds !== null)
        metrics.paymentRequestWait.observe({ mode: report.mode }, report.waitedSeconds);
    },
  };
  const worker = new PaymentWorker(
    context.paymentQueue,
    {
      concurrency: config.paymentWorkerConcurrency,
      perEndpoint: config.paymentEndpointConcurrency,
      giveUpAfterSeconds: retryPolicy.giveUpAfterSeconds,
      probeSeconds: config.paymentJobTimeoutSeconds,
      log,
      onInFlight: (count) => metrics.paymentRequestsInFlight.set(count),
    },
    (request, answered) => deliver(deps, request, answered),
  );
  await worker.start();
  logger.info(
    { concurrency: config.paymentWorkerConcurrency, per_endpoint: config.paymentEndpointConcurrency },
    'payment request worker started',
  );
  return worker;
}

/** The longest wait between two probes of a failing endpoint. */
const BREAKER_MAX_COOL_DOWN_SECONDS = 300;

const isLoopback = (host: string) => host === 'localhost' || host === '::1' || host.startsWith('127.');

/**
 * A generated admin token is kept in DATA_DIR, in a file only its owner can read, and reused by
 * every later start and by partnerctl run beside the data: restarts keep console sessions and
 * exported tokens. Its path is logged, never the token; a terminal that started the service sees it.
 */
function keepGeneratedAdminToken(config: Config, logger: FastifyBaseLogger): void {
  const file = adminTokenFile(config.dataDir);
  if (!existsSync(file)) {
    mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
    writeFileSync(file, `${config.adminToken}\n`, { mode: 0o600 });
    chmodSync(file, 0o600);
  }
  if (process.stderr.isTTY) process.stderr.write(`ADMIN_TOKEN not set: the admin token is ${config.adminToken}\n`);
  logger.warn({ file }, 'ADMIN_TOKEN not set: using the admin token kept in DATA_DIR (a file only its owner can read)');
}

/**
 * A key file in DATA_DIR sits beside the data it protects: a copy of the directory (a backup, a
 * stolen disk) is a copy of the signing secrets. Said at every start until it is gone.
 */
function warnAboutKeyFile(config: Config, logger: FastifyBaseLogger): void {
  const keyFile = keyFilePath(config.dataDir);
  if (!existsSync(keyFile)) return;
  if (!config.secretEncryptionKey) {
    logger.warn(
      { key_file: keyFile },
      'SECRET_ENCRYPTION_KEY not set: the key sealing the signing secrets is kept in DATA_DIR beside the data, ' +
        'so a copy of the directory is a copy of the secrets; set SECRET_ENCRYPTION_KEY and keep it apart (see README)',
    );
  } else {
    logger.warn(
      { key_file: keyFile },
      'the old key file in DATA_DIR still opens signing secrets: run partnerctl secrets rekey, then delete the file',
    );
  }
}

/**
 * Refuses to start when signing secrets are stored that no configured key opens (a key rotated
 * without its predecessor, a key file lost or regenerated): every payment request of their
 * tenants would fail to be signed. Without a configured key, the key file is made only once this
 * check has passed: a data directory restored without its key file gets no new one in its place.
 */
async function checkSealedSecrets(context: AppContext): Promise<void> {
  const unopenable = await countUnopenableSecrets(context.db, context.secretBox);
  const keyFile = keyFilePath(context.config.dataDir);
  if (unopenable > 0 && !context.config.secretEncryptionKey && !existsSync(keyFile)) {
    throw new ConfigError(
      `${unopenable} payment endpoint signing secret(s) in the database were sealed with a key this DATA_DIR does not ` +
        `have: the key file ${keyFile} is missing (a data directory restored or copied without it). Put the original ` +
        'file back at that path, or set SECRET_ENCRYPTION_KEY to its key; no new key file was written',
    );
  }
  if (unopenable === 0) {
    // Made now rather than at the first seal: it is there to keep apart, and the start warns about it.
    context.secretBox.sealingKey();
    return;
  }
  throw new ConfigError(
    `${unopenable} payment endpoint signing secret(s) in the database open with none of the configured keys: ` +
      'set SECRET_ENCRYPTION_KEY to the key that sealed them (after a rotation: the new key in SECRET_ENCRYPTION_KEY, ' +
      `the old one in SECRET_ENCRYPTION_KEY_PREVIOUS), or put back the original ${keyFile} (see README)`,
  );
}

/** Starts listening, on the port held for it if there is one; the listener's base URL. */
async function listen(app: HostApp, listener: ListenerConfig, held: HeldPort | undefined): Promise<string> {
  if (held) return held.listen(app);
  try {
    await app.listen({ host: listener.host, port: listener.port });
  } catch (error) {
    // A host name that does not resolve, a port taken: the configuration's, said as such (not as
    // a database out of reach, which ENOTFOUND would otherwise read as).
    throw new ConfigError(
      `the ${app.listener} listener cannot listen on ${listener.host}:${listener.port}: ${(error as Error).message}`,
    );
  }
  return listenerUrl(app);
}

export async function startService(config: Config, logger: FastifyBaseLogger): Promise<RunningService> {
  if (config.databaseUrl && !config.secretEncryptionKey) {
    // Each instance would seal signing secrets with a key file of its own: none could open another's.
    throw new ConfigError(
      'SECRET_ENCRYPTION_KEY must be set with DATABASE_URL: every instance seals and opens the signing secrets with it',
    );
  }
  const retryPolicy = { ...DEFAULT_RETRY_POLICY, baseSeconds: config.paymentRetryBaseSeconds };
  const { config: listening, held } = await holdFreePorts(config);
  const releasePorts = () => Promise.all(Object.values(held).map((port) => port.release()));
  // Before the hosts are built: @fastify/otel joins each as it is made.
  await startTracing();
  const context = await openContext(listening, { logger }).catch(async (error) => {
    await Promise.all([releasePorts(), stopTracing()]);
    throw error;
  });
  const apps: RunningService['apps'] = {};
  const urls: RunningService['urls'] = {};
  let worker: PaymentWorker | undefined;
  let pruning: { stop(): Promise<void> } | undefined;
  const close = async () => {
    await pruning?.stop();
    // Stop accepting and finish in-flight requests first, then let running payment requests
    // finish (they time out before this does), then let go of the database.
    await Promise.all(Object.values(apps).map((app) => app.close()));
    await worker?.stop(REQUEST_TIMEOUT_MS + 5000);
    await context.database.close();
    context.rateLimitStore?.redis.disconnect();
    await releasePorts();
    // Last, so that the spans of everything above are exported.
    await stopTracing();
  };
  try {
    await context.database.listen(CACHE_INVALIDATION_CHANNEL, context.caches.invalidate, context.caches.invalidate);
    await migrateDatabase(context.database, () => seedEmptyDatabase(context, logger), logger);
    await checkSealedSecrets(context);
    // The worker needs none of the listeners: it starts first, and waiting requests leave while the
    // hosts are built.
    if (config.paymentWorker) {
      worker = await startPaymentWorker(context, logger, retryPolicy);
      // Worker processes also keep the database's growth bounded.
      pruning = schedulePrune(context.database, retentionRules(config.retention), (outcome) =>
        'error' in outcome
          ? logger.error({ err: outcome.error }, 'prune failed: retried at the next turn')
          : logger.info({ deleted: outcome.deleted }, 'pruned rows past their retention'),
      );
    }
    for (const [name, listener] of Object.entries(context.config.listeners) as [ListenerName, ListenerConfig][]) {
      apps[name] = await HOST_BUILDERS[name](context, logger);
      urls[name] = await listen(apps[name], listener, held[name]);
      logger.info({ listener: name, host: listener.host }, `${name} listener on ${urls[name]}`);
    }
  } catch (error) {
    await close().catch(() => {});
    throw error;
  }
  if (config.adminTokenGenerated && config.listeners.admin) keepGeneratedAdminToken(config, logger);
  warnAboutKeyFile(config, logger);
  const admin = config.listeners.admin;
  if (admin && !isLoopback(admin.host)) {
    logger.warn(
      { host: admin.host },
      'THE ADMIN LISTENER IS NOT ON LOOPBACK: anyone who reaches it can try the admin token and scrape /metrics; ' +
        'keep it on a private network',
    );
  }
  return { context, apps, urls, close };
}
