// Configuration comes from the environment and is validated once, at start. Every variable is
// documented in docs/configuration.md; a bad value stops the process with one readable line.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseEnv } from 'node:util';
import { parseDatabaseUrl } from './db/url.js';
import { maskPassword } from './logger.js';

const LISTENER_NAMES = ['integrations', 'backend', 'admin', 'portal'] as const;
export type ListenerName = (typeof LISTENER_NAMES)[number];

export const DEFAULT_PORTS: Readonly<Record<ListenerName, number>> = {
  integrations: 8080,
  backend: 8081,
  portal: 8082,
  admin: 8090,
};
/** DATABASE_REQUEST_TIMEOUT_MS's default: the answer DECISIONS section 11 promises a client within. */
export const DEFAULT_DATABASE_REQUEST_TIMEOUT_MS = 5000;
/** How often each worker process prunes what is past its retention (src/maintenance/retention.ts). */
export const PRUNE_INTERVAL_MINUTES = 10;
/** Where partnerctl finds the admin API when ADMIN_URL is not set. */
export const DEFAULT_ADMIN_URL = `http://127.0.0.1:${DEFAULT_PORTS.admin}`;

export interface ListenerConfig {
  host: string;
  port: number;
}

export interface Config {
  /** The listeners this process runs (LISTENERS). */
  listeners: Partial<Record<ListenerName, ListenerConfig>>;
  /**
   * Every listener as configured, run here or not: the default public URL of one that another
   * process runs is its port's here (INTEGRATIONS_PORT, ...).
   */
  configuredListeners: Record<ListenerName, ListenerConfig>;
  adminToken: string;
  /** True when ADMIN_TOKEN was not set: the token is the one kept in DATA_DIR (adminTokenFile), or a new one to keep there. */
  adminTokenGenerated: boolean;
  backendPublicUrl: string | null;
  /** Where operators reach the admin listener (a private proxy's name), if not on loopback. */
  adminPublicUrl: string | null;
  /**
   * The names the admin listener answers for (the `Host` header, lowercase, any port): anything
   * else is a 421, so a page whose DNS name was rebound to the listener's address reads nothing.
   */
  adminAllowedHosts: string[];
  databaseUrl: string | null;
  /**
   * PostgreSQL itself, when DATABASE_URL is a transaction pooler (PgBouncer): what needs a session of
   * its own (LISTEN, session advisory locks, migrations) connects here; null: DATABASE_URL keeps sessions.
   */
  databaseDirectUrl: string | null;
  /** The longest a request waits for a database connection and for each statement; past it, a 503. */
  databaseRequestTimeoutMs: number;
  dataDir: string;
  supportedGateways: string[];
  logLevel: string;
  allowPrivatePaymentEndpoints: boolean;
  paymentWorker: boolean;
  /** Delay before the first retry of a payment request; later ones double (see payments/delivery/retry.ts). */
  paymentRetryBaseSeconds: number;
  /** How long a probe of a failing endpoint holds its breaker half-open, at most. */
  paymentJobTimeoutSeconds: number;
  /** Payment requests in flight at once in this process. */
  paymentWorkerConcurrency: number;
  /** Payment requests in flight at once per tenant's endpoint, all instances together. */
  paymentEndpointConcurrency: number;
  /** Consecutive failed attempts that open an endpoint's circuit breaker. */
  paymentBreakerFailures: number;
  /** The wait before an open breaker's first probe; it doubles while probes fail. */
  paymentBreakerCoolDownSeconds: number;
  /** Limit on connecting to a payment endpoint, apart from the limit on the whole answer (REQUEST_TIMEOUT_MS, src/payments/delivery/send.ts). */
  paymentConnectTimeoutSeconds: number;
  /** 32-byte key sealing the payment endpoint signing secrets; null means "keep one in DATA_DIR". */
  secretEncryptionKey: Buffer | null;
  /** Keys being rotated out: they still open secrets sealed before, until `partnerctl secrets rekey`. */
  previousSecretEncryptionKeys: Buffer[];
  /** Public base URL of the integrations host, used for `notify_url` in payment requests. */
  integrationsPublicUrl: string | null;
  /** Public base URL of the partner portal, where its sign-in links point. */
  portalPublicUrl: string | null;
  /** Origins allowed to embed the partner portal in a frame; empty: none may. */
  portalFrameAncestors: string[];
  /** JSON lines (machines) or one coloured line per event (people). */
  logFormat: 'json' | 'pretty';
  /** Requests per window per credential on the integrations and backend hosts; 0: no limit. */
  rateLimitPerMinute: number;
  /**
   * Smaller budgets of their own, per credential and window, for the requests that make rows and
   * outgoing calls at a partner's will (a route names its budget: src/http/rate-limit.ts); 0: none.
   */
  routeBudgets: { testInvoicesPerMinute: number; pingsPerMinute: number };
  /** The rate limits' window: a minute, unless shortened (tests). */
  rateLimitWindowSeconds: number;
  /** Failed authentications per minute per client address, on every host; 0: no limit. */
  authFailureLimitPerMinute: number;
  /** Redis for rate-limit counters shared by every instance; null: counters in this process. */
  redisUrl: string | null;
  /** Prefix of this service's Redis keys, so several deployments (or test runs) can share a Redis. */
  redisKeyPrefix: string;
  /**
   * Fastify's `trustProxy`: whose `X-Forwarded-For` is believed. `1` (TRUST_PROXY=true): the proxy
   * in front only, so the client is the address it appended; a list: those proxies.
   */
  trustProxy: false | 1 | string[];
  /** Bound of the cached listing pages and effective prompt sets (response bytes), in MiB; 0: none kept. */
  readCacheMb: number;
  /** What every listener grants one client, so slow or idle clients cannot hold the others off. */
  connectionLimits: ConnectionLimits;
  /** How long rows that may go are kept, in days (0: forever); see src/maintenance/retention.ts. */
  retention: {
    /** RETENTION_DELIVERY_ATTEMPTS_DAYS: payment request attempts (their invoice and events stay). */
    deliveryAttemptsDays: number;
    /** RETENTION_AUDIT_EVENTS_DAYS: operators' changes. */
    auditEventsDays: number;
    /** RETENTION_REFUSED_NOTIFICATIONS_DAYS: refused payment callbacks on record (src/payments/refusals.ts). */
    refusedNotificationsDays: number;
    /** RETENTION_PINGS_DAYS: pings of payment endpoints and their answers. */
    pingsDays: number;
    /** RETENTION_BREAKER_EVENTS_DAYS: openings, failed probes and closings of endpoints' breakers (their state stays). */
    breakerEventsDays: number;
    /** RETENTION_TEST_INVOICES_DAYS: test-mode invoices, with everything that hangs on them. */
    testInvoicesDays: number;
  };
}

interface ConnectionLimits {
  /** A request's headers must arrive within this; slowloris connections are closed after it. */
  headersTimeoutSeconds: number;
  /** The whole request (headers and body) must arrive within this. */
  requestTimeoutSeconds: number;
  /** An idle keep-alive connection is closed after this (longer than a load balancer's, typically 60 s). */
  keepAliveTimeoutSeconds: number;
  /** Open connections per listener; more are closed at once. 0: no cap. */
  maxConnections: number;
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

/** An admin token shorter than this is guessable; a generated one is 32 random bytes. */
const ADMIN_TOKEN_MIN_CHARACTERS = 32;
/**
 * Fewer bits than this, estimated from how often each character occurs, is a token of repeats
 * (`aaaa…`, `abab…`) however long: a random hex token of 32 characters scores above 90.
 */
const ADMIN_TOKEN_MIN_BITS = 80;

/** The token's length times its per-character Shannon entropy: an upper bound of its real strength. */
function estimatedBits(token: string): number {
  const characters = [...token];
  const counts = new Map<string, number>();
  for (const character of characters) counts.set(character, (counts.get(character) ?? 0) + 1);
  let bitsPerCharacter = 0;
  for (const count of counts.values()) {
    const share = count / characters.length;
    bitsPerCharacter -= share * Math.log2(share);
  }
  return bitsPerCharacter * characters.length;
}

/** Why ADMIN_TOKEN is too weak to be the admin's only credential, or null. */
function adminTokenWeakness(token: string): string | null {
  if (token.length < ADMIN_TOKEN_MIN_CHARACTERS) return `must be at least ${ADMIN_TOKEN_MIN_CHARACTERS} characters`;
  // Whitespace or a control character in a token is a copy-and-paste accident more often than a choice.
  if (/[\s\p{C}]/u.test(token)) return 'must not contain whitespace or control characters';
  if (estimatedBits(token) < ADMIN_TOKEN_MIN_BITS) return 'is too predictable (repeated characters)';
  return null;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function port(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) > 65535) {
    throw new ConfigError(`${name} must be a port number from 0 to 65535, got "${raw}"`);
  }
  return Number(raw);
}

function flag(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (['true', '1', 'yes'].includes(raw.toLowerCase())) return true;
  if (['false', '0', 'no'].includes(raw.toLowerCase())) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

function seconds(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || value < min || value > max) {
    throw new ConfigError(`${name} must be a number of seconds from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

function milliseconds(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be a whole number of milliseconds from ${min} to ${max}, got "${raw}"`);
  }
  return Number(raw);
}

function count(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
    throw new ConfigError(`${name} must be a whole number (0 disables), got "${raw}"`);
  }
  return Number(raw);
}

function atLeastOne(env: Env, name: string, fallback: number): number {
  const value = count(env, name, fallback);
  if (value < 1) throw new ConfigError(`${name} must be at least 1, got "${env[name]}"`);
  return value;
}

/** `false` (default), `true`, or a comma list of the proxies' addresses or CIDRs. */
function trustProxy(env: Env): Config['trustProxy'] {
  const raw = (env.TRUST_PROXY ?? '').trim();
  if (raw === '' || /^(false|0|no)$/i.test(raw)) return false;
  // Not every hop: addresses a client writes into the header itself would then count as its own.
  if (/^(true|yes)$/i.test(raw)) return 1;
  const addresses = raw.split(',').map((address) => address.trim());
  if (addresses.some((address) => !/^[0-9a-f:.]+(\/\d{1,3})?$/i.test(address))) {
    throw new ConfigError(`TRUST_PROXY must be true, false or a list of proxy addresses, got "${raw}"`);
  }
  return addresses;
}

function connectionLimits(env: Env): ConnectionLimits {
  const limits = {
    headersTimeoutSeconds: seconds(env, 'HEADERS_TIMEOUT_SECONDS', 10, 1, 600),
    requestTimeoutSeconds: seconds(env, 'REQUEST_TIMEOUT_SECONDS', 30, 1, 3600),
    keepAliveTimeoutSeconds: seconds(env, 'KEEP_ALIVE_TIMEOUT_SECONDS', 72, 1, 3600),
    maxConnections: count(env, 'MAX_CONNECTIONS', 4096),
  };
  if (limits.headersTimeoutSeconds > limits.requestTimeoutSeconds) {
    throw new ConfigError('HEADERS_TIMEOUT_SECONDS must not exceed REQUEST_TIMEOUT_SECONDS');
  }
  return limits;
}

function logFormat(env: Env, stdoutIsTerminal: boolean): Config['logFormat'] {
  const raw = env.LOG_FORMAT || (stdoutIsTerminal ? 'pretty' : 'json');
  if (raw !== 'json' && raw !== 'pretty') throw new ConfigError(`LOG_FORMAT must be json or pretty, got "${raw}"`);
  return raw;
}

/** `parse`: how the URL is read; DATABASE_URL's may name several hosts. */
function url(env: Env, name: string, protocols: string[], parse = (raw: string) => new URL(raw)): string | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return null;
  let parsed: URL;
  try {
    parsed = parse(raw);
  } catch {
    throw new ConfigError(`${name} must be a URL, got "${maskPassword(raw)}"`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must be a ${protocols.join(' or ')} URL, got "${parsed.protocol}"`);
  }
  return raw.replace(/\/+$/, '');
}

/** Those postgres.js connects with; libpq's `any` it does not know. */
const TARGET_SESSION_ATTRS = ['read-write', 'read-only', 'primary', 'standby', 'prefer-standby'];

/** DATABASE_URL or DATABASE_DIRECT_URL: one PostgreSQL URL, or several hosts of one. */
function databaseUrl(env: Env, name: 'DATABASE_URL' | 'DATABASE_DIRECT_URL'): string | null {
  const raw = url(env, name, ['postgres:', 'postgresql:'], parseDatabaseUrl);
  const attrs = raw && parseDatabaseUrl(raw).searchParams.get('target_session_attrs');
  if (attrs && !TARGET_SESSION_ATTRS.includes(attrs)) {
    throw new ConfigError(
      `${name}'s target_session_attrs must be one of ${TARGET_SESSION_ATTRS.join(', ')}, got "${attrs}"`,
    );
  }
  return raw;
}

function databaseDirectUrl(env: Env): string | null {
  const direct = databaseUrl(env, 'DATABASE_DIRECT_URL');
  if (direct && !env.DATABASE_URL) {
    throw new ConfigError(
      'DATABASE_DIRECT_URL needs DATABASE_URL: it names PostgreSQL itself beside the pooler of DATABASE_URL',
    );
  }
  return direct;
}

function configuredListeners(env: Env): Config['configuredListeners'] {
  const host = env.HOST || '0.0.0.0';
  return {
    integrations: { host, port: port(env, 'INTEGRATIONS_PORT', DEFAULT_PORTS.integrations) },
    backend: { host, port: port(env, 'BACKEND_PORT', DEFAULT_PORTS.backend) },
    admin: { host: env.ADMIN_HOST || '127.0.0.1', port: port(env, 'ADMIN_PORT', DEFAULT_PORTS.admin) },
    portal: { host, port: port(env, 'PORTAL_PORT', DEFAULT_PORTS.portal) },
  };
}

function listeners(env: Env, all: Config['configuredListeners']): Config['listeners'] {
  const enabled = (env.LISTENERS ?? LISTENER_NAMES.join(','))
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  for (const name of enabled) {
    if (!(LISTENER_NAMES as readonly string[]).includes(name)) {
      throw new ConfigError(`LISTENERS may name ${LISTENER_NAMES.join(', ')}; got "${name}"`);
    }
  }
  return Object.fromEntries(enabled.map((name) => [name, all[name as ListenerName]]));
}

/** PORTAL_FRAME_ANCESTORS: a space or comma list of origins (`https://dashboard.example.com`), or nothing. */
function frameAncestors(env: Env): string[] {
  const origins = (env.PORTAL_FRAME_ANCESTORS ?? '').split(/[\s,]+/).filter(Boolean);
  for (const origin of origins) {
    let parsed: URL | null = null;
    try {
      parsed = new URL(origin);
    } catch {}
    if (!parsed || !['http:', 'https:'].includes(parsed.protocol) || parsed.origin !== origin.replace(/\/$/, '')) {
      throw new ConfigError(
        `PORTAL_FRAME_ANCESTORS must list origins such as https://dashboard.example.com, got "${origin}"`,
      );
    }
  }
  return origins.map((origin) => origin.replace(/\/$/, ''));
}

/** What a browser or client on the listener's own machine names it. */
const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];

/** ADMIN_ALLOWED_HOSTS: a comma list of names (`[...]` for an IPv6 address); by default loopback's and ADMIN_PUBLIC_URL's. */
function adminAllowedHosts(env: Env, adminPublicUrl: string | null): string[] {
  const raw = (env.ADMIN_ALLOWED_HOSTS ?? '').trim();
  if (raw === '') return [...LOOPBACK_NAMES, ...(adminPublicUrl ? [new URL(adminPublicUrl).hostname] : [])];
  const names = raw.split(',').map((name) => name.trim().toLowerCase());
  const bad = names.find((name) => !/^([a-z0-9_.-]+|\[[0-9a-f:.]+\])$/.test(name));
  if (bad !== undefined) {
    throw new ConfigError(
      `ADMIN_ALLOWED_HOSTS must be a comma list of host names or addresses (no port), got "${bad}"`,
    );
  }
  return names;
}

/** A 32-byte key written as 64 hex digits or base64. */
function parseKey(name: string, raw: string): Buffer {
  const key = /^[0-9a-f]{64}$/i.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
  if (key.length !== 32) throw new ConfigError(`${name} must be 32 bytes, as 64 hex digits or base64`);
  return key;
}

function encryptionKey(env: Env): Buffer | null {
  const raw = env.SECRET_ENCRYPTION_KEY;
  return raw === undefined || raw === '' ? null : parseKey('SECRET_ENCRYPTION_KEY', raw);
}

/** SECRET_ENCRYPTION_KEY_PREVIOUS: a comma list of keys being rotated out. */
function previousEncryptionKeys(env: Env): Buffer[] {
  const raw = (env.SECRET_ENCRYPTION_KEY_PREVIOUS ?? '').trim();
  if (raw === '') return [];
  if (!env.SECRET_ENCRYPTION_KEY) {
    throw new ConfigError('SECRET_ENCRYPTION_KEY_PREVIOUS needs SECRET_ENCRYPTION_KEY: the key to seal under now');
  }
  return raw.split(',').map((key) => parseKey('SECRET_ENCRYPTION_KEY_PREVIOUS', key.trim()));
}

/**
 * The environment over the variables of ENV_FILE (default `./.env`, when present): what the
 * environment sets wins, so a deployment can override the file one variable at a time.
 */
export function environmentWithFile(env: Env = process.env): Env {
  const file = env.ENV_FILE || '.env';
  if (!env.ENV_FILE && !existsSync(file)) return env;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(`ENV_FILE ${file} cannot be read: ${(error as Error).message}`);
  }
  // Node's parser skips such a line, or (Node 20) joins it to the next line's name: either way a
  // variable the operator meant to set would be lost without a word.
  const malformed = lineNotAnAssignment(text);
  if (malformed !== null) {
    throw new ConfigError(`ENV_FILE ${file}: ${JSON.stringify(malformed.slice(0, 80))} is not a NAME=value line`);
  }
  return { ...parseEnv(text), ...env };
}

/** The first line of a .env text that is neither blank, a comment, NAME=value, nor inside a quoted value. */
function lineNotAnAssignment(text: string): string | null {
  let openQuote: string | null = null;
  for (const line of text.split(/\r?\n/)) {
    if (openQuote !== null) {
      if (line.includes(openQuote)) openQuote = null;
      continue;
    }
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const assignment = /^(?:export\s+)?[A-Za-z_][A-Za-z0-9_]*\s*=\s*(.*)$/.exec(trimmed);
    if (!assignment) return trimmed;
    const [quote] = assignment[1];
    if ((quote === '"' || quote === "'" || quote === '`') && !assignment[1].slice(1).includes(quote)) openQuote = quote;
  }
  return null;
}

/** Where a generated admin token is kept, so restarts and partnerctl beside the data reuse it. */
export const adminTokenFile = (dataDir: string) => path.join(dataDir, 'admin-token');

/** The admin token kept in DATA_DIR by an earlier start, or null. */
export function storedAdminToken(dataDir: string): string | null {
  const file = adminTokenFile(dataDir);
  if (!existsSync(file)) return null;
  const token = readFileSync(file, 'utf8').trim();
  return token === '' ? null : token;
}

export function loadConfig(env: Env = environmentWithFile(), stdoutIsTerminal = process.stdout.isTTY === true): Config {
  const gateways = (env.SUPPORTED_GATEWAYS ?? 'tap,hyperpay')
    .split(',')
    .map((gateway) => gateway.trim())
    .filter(Boolean);
  if (gateways.length === 0) throw new ConfigError('SUPPORTED_GATEWAYS must name at least one gateway');

  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }

  const adminToken = env.ADMIN_TOKEN ?? '';
  const weakness = adminToken ? adminTokenWeakness(adminToken) : null;
  if (weakness) throw new ConfigError(`ADMIN_TOKEN ${weakness}: use a random one (for example: openssl rand -hex 32)`);
  const dataDir = path.resolve(env.DATA_DIR || './data');
  const adminPublicUrl = url(env, 'ADMIN_PUBLIC_URL', ['http:', 'https:']);
  const allListeners = configuredListeners(env);
  return {
    listeners: listeners(env, allListeners),
    configuredListeners: allListeners,
    adminToken: adminToken || storedAdminToken(dataDir) || randomBytes(32).toString('base64url'),
    adminTokenGenerated: !adminToken,
    backendPublicUrl: url(env, 'BACKEND_PUBLIC_URL', ['http:', 'https:']),
    adminPublicUrl,
    adminAllowedHosts: adminAllowedHosts(env, adminPublicUrl),
    integrationsPublicUrl: url(env, 'INTEGRATIONS_PUBLIC_URL', ['http:', 'https:']),
    portalPublicUrl: url(env, 'PORTAL_PUBLIC_URL', ['http:', 'https:']),
    portalFrameAncestors: frameAncestors(env),
    databaseUrl: databaseUrl(env, 'DATABASE_URL'),
    databaseDirectUrl: databaseDirectUrl(env),
    databaseRequestTimeoutMs: milliseconds(
      env,
      'DATABASE_REQUEST_TIMEOUT_MS',
      DEFAULT_DATABASE_REQUEST_TIMEOUT_MS,
      100,
      60_000,
    ),
    dataDir,
    supportedGateways: gateways,
    logLevel,
    allowPrivatePaymentEndpoints: flag(env, 'ALLOW_PRIVATE_PAYMENT_ENDPOINTS', false),
    paymentWorker: flag(env, 'PAYMENT_WORKER', true),
    paymentRetryBaseSeconds: seconds(env, 'PAYMENT_RETRY_BASE_SECONDS', 30, 0.5, 3600),
    // Above the time an attempt may take (REQUEST_TIMEOUT_MS, src/payments/delivery/send.ts), or a live attempt would be made twice.
    paymentJobTimeoutSeconds: seconds(env, 'PAYMENT_JOB_TIMEOUT_SECONDS', 120, 20, 3600),
    paymentWorkerConcurrency: atLeastOne(env, 'PAYMENT_WORKER_CONCURRENCY', 64),
    paymentEndpointConcurrency: atLeastOne(env, 'PAYMENT_ENDPOINT_CONCURRENCY', 8),
    paymentBreakerFailures: atLeastOne(env, 'PAYMENT_BREAKER_FAILURES', 5),
    paymentBreakerCoolDownSeconds: seconds(env, 'PAYMENT_BREAKER_COOL_DOWN_SECONDS', 10, 0.1, 3600),
    paymentConnectTimeoutSeconds: seconds(env, 'PAYMENT_CONNECT_TIMEOUT_SECONDS', 3, 0.1, 15),
    secretEncryptionKey: encryptionKey(env),
    previousSecretEncryptionKeys: previousEncryptionKeys(env),
    logFormat: logFormat(env, stdoutIsTerminal),
    rateLimitPerMinute: count(env, 'RATE_LIMIT_PER_MINUTE', 1200),
    routeBudgets: {
      testInvoicesPerMinute: count(env, 'RATE_LIMIT_TEST_INVOICES_PER_MINUTE', 60),
      pingsPerMinute: count(env, 'RATE_LIMIT_PINGS_PER_MINUTE', 10),
    },
    rateLimitWindowSeconds: seconds(env, 'RATE_LIMIT_WINDOW_SECONDS', 60, 1, 3600),
    authFailureLimitPerMinute: count(env, 'AUTH_FAILURE_LIMIT_PER_MINUTE', 30),
    redisUrl: url(env, 'REDIS_URL', ['redis:', 'rediss:']),
    redisKeyPrefix: env.REDIS_KEY_PREFIX || 'partner-integrations',
    trustProxy: trustProxy(env),
    connectionLimits: connectionLimits(env),
    readCacheMb: count(env, 'READ_CACHE_MB', 16),
    // Retention (docs/operations.md): live payment events are never pruned; these go after so many days.
    retention: {
      deliveryAttemptsDays: count(env, 'RETENTION_DELIVERY_ATTEMPTS_DAYS', 90),
      auditEventsDays: count(env, 'RETENTION_AUDIT_EVENTS_DAYS', 730),
      refusedNotificationsDays: count(env, 'RETENTION_REFUSED_NOTIFICATIONS_DAYS', 30),
      pingsDays: count(env, 'RETENTION_PINGS_DAYS', 30),
      breakerEventsDays: count(env, 'RETENTION_BREAKER_EVENTS_DAYS', 90),
      testInvoicesDays: count(env, 'RETENTION_TEST_INVOICES_DAYS', 7),
    },
  };
}
