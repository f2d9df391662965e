// A partner's payment backend under a fault: a steady stream of `paid` notifications to the
// callback, each with its own transaction id, retried like a partner retries (same body) until it
// is answered 200. What every request was answered is kept, to be checked against the database.
import { TEST_ADMIN_TOKEN } from '../../support/env.js';

interface Invoice {
  id: string;
  tripId: string;
  amount: string;
}

export interface Partner {
  tenantId: string;
  apiKey: string;
  /** For the tenant's `/api/v1/` resources. */
  ssoSecret: string;
  invoices: Invoice[];
}

/** The answer's JSON, as `T`: the fields the caller reads. */
async function adminPost<T>(adminUrl: string, path: string, body: unknown): Promise<T> {
  const response = await fetch(`${adminUrl}/admin/v1${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.status !== 201) throw new Error(`POST ${path}: ${response.status} ${await response.text()}`);
  return response.json() as Promise<T>;
}

/**
 * A tenant and `count` pending invoices, each for a trip of its own; its payment endpoint
 * `paymentEndpointUrl`, set once the invoices are made, or none.
 */
export async function createPartner(adminUrl: string, count: number, paymentEndpointUrl?: string): Promise<Partner> {
  const slug = `faults-${Math.random().toString(36).slice(2, 10)}`;
  const created = await adminPost<{
    tenant: { id: string };
    credentials: { partner_api_key: string; sso_hmac_secret: string };
  }>(adminUrl, '/tenants', { name: slug, slug, gateway: 'tap' });
  const tenantId: string = created.tenant.id;
  const invoices: Invoice[] = [];
  for (let i = 0; i < count; i++) {
    const { trip } = await adminPost<{ trip: { id: string } }>(adminUrl, '/trips', {
      tenant_id: tenantId,
      title: `Trip ${i}`,
    });
    const { invoice } = await adminPost<{ invoice: { id: string; amount: string } }>(adminUrl, '/invoices', {
      tenant_id: tenantId,
      trip_id: trip.id,
      amount: `${100 + i}.00`,
      currency: 'SAR',
    });
    invoices.push({ id: invoice.id, tripId: trip.id, amount: invoice.amount });
  }
  if (paymentEndpointUrl) {
    const response = await fetch(`${adminUrl}/admin/v1/tenants/${tenantId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ payment_endpoint_url: paymentEndpointUrl }),
    });
    if (response.status !== 200)
      throw new Error(`PATCH /tenants/${tenantId}: ${response.status} ${await response.text()}`);
  }
  return {
    tenantId,
    apiKey: created.credentials.partner_api_key,
    ssoSecret: created.credentials.sso_hmac_secret,
    invoices,
  };
}

/** What one request came to: an HTTP status, `error` (no answer: connection refused or reset) or `timeout`. */
type Outcome = number | 'error' | 'timeout';

interface Notification {
  transactionId: string;
  body: string;
  /** success, duplicate, or null while it has no 200. */
  accepted: 'success' | 'duplicate' | null;
}

interface LoadOptions {
  /** Requests per second, across `concurrency` senders. */
  rate: number;
  concurrency?: number;
  /** A request not answered within this is counted as `timeout` (and retried). */
  timeoutMs?: number;
  /** How requests are sent (through a TLS proxy, say): the global fetch by default. */
  fetch?: (url: string, init: RequestInit) => Promise<Response>;
}

const NO_ANSWER_PAUSE_MS = 250;

export class CallbackLoad {
  readonly answered = new Map<string, number>();
  readonly notifications: Notification[] = [];
  /** Every request: when it was sent, when it ended, how. */
  readonly requests: { started: number; ended: number; outcome: Outcome }[] = [];
  /** Longest time any request took to be answered or to fail, in ms. */
  slowestMs = 0;
  sent = 0;
  /** 200s whose body was neither success nor duplicate: always a bug. */
  unexpected: string[] = [];
  private running = false;
  private senders: Promise<void>[] = [];
  private retries: Notification[] = [];
  private next = 0;

  constructor(
    private url: string,
    private readonly partner: Partner,
    private readonly options: LoadOptions,
  ) {}

  /** Where the callback is, after the service restarted on another port. */
  retarget(url: string): void {
    this.url = url;
  }

  start(): void {
    this.running = true;
    const concurrency = this.options.concurrency ?? 8;
    const interval = (1000 * concurrency) / this.options.rate;
    this.senders = Array.from({ length: concurrency }, async () => {
      while (this.running) {
        const started = Date.now();
        const outcome = await this.send(this.retries.shift() ?? this.newNotification());
        // Nobody listening (the service is down): a partner's client backs off a little too.
        const pause = outcome === 'error' ? NO_ANSWER_PAUSE_MS : interval - (Date.now() - started);
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, pause)));
      }
    });
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.senders);
  }

  /** Sends every notification not yet answered 200 again, until each is, or `deadlineMs` passes. */
  async settle(deadlineMs = 30_000): Promise<void> {
    const deadline = Date.now() + deadlineMs;
    for (;;) {
      const pending = this.notifications.filter((notification) => notification.accepted === null);
      if (pending.length === 0) return;
      if (Date.now() > deadline) throw new Error(`${pending.length} notifications never answered 200`);
      for (const notification of pending) await this.send(notification);
    }
  }

  /** Requests answered with `status`. */
  count(outcome: Outcome): number {
    return this.answered.get(String(outcome)) ?? 0;
  }

  /** `200:1234 503:40 error:3`: requests per outcome. */
  describe(): string {
    return [...this.answered.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([outcome, count]) => `${outcome}:${count}`)
      .join(' ');
  }

  private newNotification(): Notification {
    const invoice = this.partner.invoices[this.next++ % this.partner.invoices.length];
    const transactionId = `txn_${this.next}_${Math.random().toString(36).slice(2, 10)}`;
    const body = JSON.stringify({
      invoice_id: invoice.id,
      transaction_id: transactionId,
      status: 'paid',
      amount: invoice.amount,
      currency: 'SAR',
      gateway: 'tap',
    });
    const notification: Notification = { transactionId, body, accepted: null };
    this.notifications.push(notification);
    return notification;
  }

  private async send(notification: Notification): Promise<Outcome> {
    const started = Date.now();
    const outcome = await this.post(notification);
    this.sent++;
    this.requests.push({ started, ended: Date.now(), outcome });
    this.slowestMs = Math.max(this.slowestMs, Date.now() - started);
    this.answered.set(String(outcome), (this.answered.get(String(outcome)) ?? 0) + 1);
    if (outcome !== 200 && notification.accepted === null && this.running) this.retries.push(notification);
    return outcome;
  }

  private async post(notification: Notification): Promise<Outcome> {
    try {
      const response = await (this.options.fetch ?? fetch)(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': this.partner.apiKey },
        body: notification.body,
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 5000),
      });
      const text = await response.text();
      if (response.status === 200) {
        const status = JSON.parse(text).status;
        if (status !== 'success' && status !== 'duplicate') this.unexpected.push(text);
        // A retry of a notification stored before is a duplicate: the first 200 is what counts.
        notification.accepted ??= status;
      }
      return response.status;
    } catch (error) {
      return (error as Error).name === 'TimeoutError' ? 'timeout' : 'error';
    }
  }
}
