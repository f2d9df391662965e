// Cheaper than a whole service (service.ts): the context opened on a fresh copy of the run's
// template database, and only the hosts a test names, answered in process with `inject`. No
// listeners, no payment worker, no LISTEN for other processes' changes: a test that needs those
// starts a real service.
import { randomBytes } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import type { FastifyBaseLogger, InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, inject } from 'vitest';
import { type ListenerName, loadConfig } from '../../src/config.js';
import type { AppContext } from '../../src/context.js';
import { type Tenant, tenantView } from '../../src/http/admin/tenants.js';
import { HeldPort } from '../../src/http/held-port.js';
import type { HostApp } from '../../src/http/host.js';
import { createLogger } from '../../src/logger.js';
import { HOST_BUILDERS, openContext } from '../../src/server.js';
import { createTenant } from '../../src/tenants/tenants.js';
import { copyTemplateDatabase, type TestDatabase } from './database.js';
import { checkAnswersAgainstDocument } from './documented-answers.js';
import { TEST_ADMIN_TOKEN, testEnv } from './env.js';

/** A tenant as the admin API shows it on creation, with its three secrets. */
export interface TestTenant {
  tenant: Static<typeof Tenant>;
  credentials: { sso_hmac_secret: string; partner_api_key: string; payment_endpoint_secret: string };
}

export interface TestContext {
  context: AppContext;
  database: TestDatabase;
  /** A tenant with one secret of each kind, as the admin API creates it and shows it. */
  createTenant(fields?: Record<string, unknown>): Promise<TestTenant>;
  /** Closes the context (and apps), keeping the database: for a test that hands it to a process. Once only. */
  close(): Promise<void>;
  /** Closes, then drops the database. */
  stop(): Promise<void>;
}

export interface TestApps extends TestContext {
  apps: Partial<Record<ListenerName, HostApp>>;
  /** Base URL of each app listening (only with `listen`), e.g. `http://127.0.0.1:41234`. */
  urls: Partial<Record<ListenerName, string>>;
  /** A request to the admin API, authorised (the admin host must be among those built). */
  admin(method: InjectOptions['method'], path: string, body?: unknown): Promise<LightMyRequestResponse>;
}

export const uniqueSlug = () => `tenant-${randomBytes(4).toString('hex')}`;

/** Authorised admin API requests, in process, to `app` (undefined when the admin host is not built). */
export function adminRequests(app: HostApp | undefined): TestApps['admin'] {
  return (method, path, body) => {
    if (!app) throw new Error('the admin host was not built');
    return app.inject({
      method,
      url: `/admin/v1${path}`,
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
      ...(body !== undefined && { payload: body as InjectOptions['payload'] }),
    });
  };
}

/**
 * The context of a service on a fresh copy of the template (migrated and seeded by the global
 * setup), with the payment queue ready to enqueue but nothing working it.
 */
export async function openTestContext(env: Record<string, string> = {}): Promise<TestContext> {
  const database = await copyTemplateDatabase(inject('databaseTemplate'));
  const context = await openContext(loadConfig(testEnv(database.target, env)));
  let closed: Promise<void> | undefined;
  const close = () => (closed ??= context.database.close());
  return {
    context,
    database,
    async createTenant(fields = {}) {
      const slug = uniqueSlug();
      const { tenant, secrets } = await createTenant(
        context.db,
        { name: `Tenant ${slug}`, slug, gateway: 'tap', ...fields },
        { supportedGateways: context.config.supportedGateways },
        (secret) => context.secretBox.seal(secret),
      );
      return { tenant: tenantView(tenant), credentials: secrets };
    },
    close,
    async stop() {
      await close();
      await database.drop();
    },
  };
}

export interface TestAppsOptions {
  env?: Record<string, string>;
  logger?: FastifyBaseLogger;
  /** Also listen on free loopback ports, for tests about real HTTP (the public URLs follow, as in startService). */
  listen?: boolean;
}

/** The named hosts' apps on a fresh test context, ready for `inject`. */
export async function startTestApps(
  hosts: ListenerName[],
  { env = {}, logger = createLogger('silent'), listen = false }: TestAppsOptions = {},
): Promise<TestApps> {
  // Listening apps get their ports first, held until they listen: the public URLs follow from them,
  // as in startService.
  const held: Partial<Record<ListenerName, HeldPort>> = {};
  const ports: Record<string, string> = {};
  if (listen) {
    for (const name of hosts) {
      held[name] = await HeldPort.on('127.0.0.1');
      ports[`${name.toUpperCase()}_PORT`] = String(held[name].port);
    }
  }
  const releasePorts = () => Promise.all(Object.values(held).map((port) => port.release()));
  const opened = await openTestContext({ ...ports, ...env }).catch(async (error) => {
    await releasePorts();
    throw error;
  });
  const apps: TestApps['apps'] = {};
  const urls: TestApps['urls'] = {};
  let closed: Promise<void> | undefined;
  const close = () =>
    (closed ??= (async () => {
      await Promise.all(Object.values(apps).map((app) => app.close()));
      await releasePorts();
      await opened.close();
    })());
  try {
    for (const name of hosts) {
      apps[name] = await HOST_BUILDERS[name](opened.context, logger);
      checkAnswersAgainstDocument(apps[name], name);
      const port = held[name];
      if (port) urls[name] = await port.listen(apps[name]);
      else await apps[name].ready();
    }
  } catch (error) {
    await close();
    await opened.database.drop();
    throw error;
  }
  return {
    ...opened,
    apps,
    urls,
    admin: adminRequests(apps.admin),
    close,
    async stop() {
      await close();
      await opened.database.drop();
    },
  };
}

/**
 * What `make` returns, made by a `beforeAll` hook of the enclosing file or `describe` block. The
 * object is returned at once, for the tests and later hooks to close over, and filled in when the
 * hook has run. `release`, when given, runs in the matching `afterAll` (only if `make` succeeded).
 */
export function madeBeforeAll<T extends object>(make: () => Promise<T>, release?: (made: T) => Promise<void>): T {
  const made = {} as T;
  let ready = false;
  beforeAll(async () => {
    Object.assign(made, await make());
    ready = true;
  });
  if (release) afterAll(async () => ready && (await release(made)));
  return made;
}

/** Options, or a function giving them when the hook runs (for a value an earlier hook makes). */
export type OptionsWhenStarted<T> = T | (() => T);

export const optionsNow = <T>(options: OptionsWhenStarted<T>): T =>
  typeof options === 'function' ? (options as () => T)() : options;

/**
 * The named hosts' apps (startTestApps) for the tests of the enclosing file or `describe` block:
 * started before them, stopped and their database dropped after them.
 *
 *   const service = useApps(['integrations', 'admin']);
 *   const tenant = useTenant(service);
 */
export function useApps(hosts: ListenerName[], options: OptionsWhenStarted<TestAppsOptions> = {}): TestApps {
  return madeBeforeAll(
    () => startTestApps(hosts, optionsNow(options)),
    (apps) => apps.stop(),
  );
}

/** A bare test context (openTestContext) for the tests of the enclosing file or `describe` block. */
export function useTestContext(env: OptionsWhenStarted<Record<string, string>> = {}): TestContext {
  return madeBeforeAll(
    () => openTestContext(optionsNow(env)),
    (opened) => opened.stop(),
  );
}

/** A tenant created before the tests of the enclosing file or `describe` block, shared by them. */
export function useTenant(apps: Pick<TestContext, 'createTenant'>, fields?: Record<string, unknown>): TestTenant {
  return madeBeforeAll(() => apps.createTenant(fields));
}
