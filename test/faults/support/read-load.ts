// Partners' reads under a fault: listing pages on both public hosts, requested at a steady rate,
// every answer kept. And operators creating invoices (each one's payment request is what the
// partner must receive exactly once), retried with the same Idempotency-Key as a client would.
import { TEST_ADMIN_TOKEN } from '../../support/env.js';

type Fetch = (url: string, init?: RequestInit) => Promise<Response>;

/** Requests per outcome (`200`, `503`, `error`, ...), and each one's start and end. */
export class Tally {
  readonly counts = new Map<string, number>();
  readonly requests: { started: number; ended: number; outcome: string }[] = [];
  sent = 0;

  add(outcome: string, started: number): void {
    this.sent++;
    this.counts.set(outcome, (this.counts.get(outcome) ?? 0) + 1);
    this.requests.push({ started, ended: Date.now(), outcome });
  }

  /** Requests not answered `expected`. */
  failed(expected: number): number {
    return this.sent - (this.counts.get(String(expected)) ?? 0);
  }

  describe(): string {
    return [...this.counts.entries()].map(([outcome, count]) => `${outcome}:${count}`).join(' ');
  }
}

async function outcomeOf(request: Promise<Response>): Promise<{ outcome: string; response?: Response }> {
  try {
    const response = await request;
    return { outcome: String(response.status), response };
  } catch (error) {
    return { outcome: (error as Error).name === 'TimeoutError' ? 'timeout' : 'error' };
  }
}

/** A loop of one request at a time until stopped, about `perSecond` a second. */
abstract class Loop {
  private running = false;
  private loop: Promise<void> = Promise.resolve();

  constructor(private readonly perSecond: number) {}

  start(): void {
    this.running = true;
    this.loop = (async () => {
      while (this.running) {
        const started = Date.now();
        await this.step();
        await new Promise((resolve) =>
          setTimeout(resolve, Math.max(0, 1000 / this.perSecond - (Date.now() - started))),
        );
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  protected abstract step(): Promise<void>;
}

/** Listing pages (the URLs in turn), each expected to answer 200. */
export class ListingLoad extends Loop {
  readonly tally = new Tally();
  private next = 0;

  constructor(
    private readonly send: Fetch,
    private readonly pages: { url: string; authorization: string }[],
    perSecond: number,
  ) {
    super(perSecond);
  }

  protected async step(): Promise<void> {
    const page = this.pages[this.next++ % this.pages.length];
    const started = Date.now();
    const { outcome, response } = await outcomeOf(
      this.send(page.url, { headers: { authorization: page.authorization }, signal: AbortSignal.timeout(5000) }),
    );
    await response?.arrayBuffer();
    this.tally.add(outcome, started);
  }
}

/** Invoices for `tenantId` created through the admin API at `adminUrl`, each retried with its key until 201. */
export class InvoiceLoad extends Loop {
  /** Every request, retries included. */
  readonly tally = new Tally();
  readonly invoiceIds: string[] = [];

  constructor(
    private readonly send: Fetch,
    private readonly adminUrl: string,
    private readonly tenantId: string,
    perSecond: number,
  ) {
    super(perSecond);
  }

  protected async step(): Promise<void> {
    const key = `rolling-${this.invoiceIds.length}-${Math.random().toString(36).slice(2)}`;
    for (let attempt = 0; attempt < 20; attempt++) {
      const started = Date.now();
      const { outcome, response } = await outcomeOf(
        this.send(`${this.adminUrl}/admin/v1/invoices`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${TEST_ADMIN_TOKEN}`,
            'content-type': 'application/json',
            'idempotency-key': key,
          },
          body: JSON.stringify({ tenant_id: this.tenantId, amount: '10.00', currency: 'SAR' }),
          signal: AbortSignal.timeout(5000),
        }),
      );
      this.tally.add(outcome, started);
      if (outcome === '201') {
        this.invoiceIds.push((await response!.json()).invoice.id);
        return;
      }
      await response?.arrayBuffer();
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    throw new Error(`invoice ${key} never created: ${this.tally.describe()}`);
  }
}
