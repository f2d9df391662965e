// What every host and worker is given: validated configuration, the database, the caches, the
// secret box, the payment request queue, the metrics and, when configured, Redis. Opened once
// (openContext), complete, and never changed after.
import type { Caches } from './cache.js';
import type { Config } from './config.js';
import type { Database, DatabaseHandle } from './db/client.js';
import type { Metrics } from './metrics.js';
import type { PaymentRequests, SigningDependencies } from './payments/index.js';
import type { RateLimitStore } from './rate-limit-store.js';
import type { SecretBox } from './tenants/index.js';

interface PublicUrls {
  readonly integrations: string;
  readonly backend: string;
  /** Where the partner portal's sign-in links point. */
  readonly portal: string;
}

export interface AppContext {
  readonly config: Config;
  readonly database: DatabaseHandle;
  readonly db: Database;
  /** The in-process caches of what the database holds, their generation and statistics. */
  readonly caches: Caches;
  readonly secretBox: SecretBox;
  /** Created with the context, started by startService: invoice creation enqueues on it. */
  readonly paymentQueue: PaymentRequests;
  readonly metrics: Metrics;
  /**
   * Where partners reach each public host: INTEGRATIONS_PUBLIC_URL, BACKEND_PUBLIC_URL and PORTAL_PUBLIC_URL, else the
   * listener's own loopback address. Links and flag URLs are built from these, never from a request's
   * Host header, which the client chooses.
   */
  readonly publicUrls: PublicUrls;
  /** Shared rate-limit counters in Redis (REDIS_URL); null keeps them in this process. */
  readonly rateLimitStore: RateLimitStore | null;
}

/** What signing and sending to a tenant's payment endpoint needs (payment requests and pings). */
export function signingDependencies(context: AppContext): SigningDependencies {
  return {
    db: context.db,
    openSecret: (sealed) => context.secretBox.open(sealed),
    allowPrivateEndpoints: context.config.allowPrivatePaymentEndpoints,
    connectTimeoutMs: context.config.paymentConnectTimeoutSeconds * 1000,
  };
}
