// Polling helpers of the fault suite: wait for a condition, and watch /readyz while a fault lasts.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';

import { waitFor } from '../../support/partner-endpoint.js';

export { waitFor };

/** Whether something accepts TCP connections on the loopback `port`. */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.end();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export interface Sample {
  at: number;
  status: number | 'error' | 'timeout';
  ms: number;
}

/** GETs `url` with a time limit: its status and how long it took. */
async function timedGet(url: string, timeoutMs = 5000): Promise<Sample> {
  const at = Date.now();
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    await response.arrayBuffer();
    return { at, status: response.status, ms: Date.now() - at };
  } catch (error) {
    return { at, status: (error as Error).name === 'TimeoutError' ? 'timeout' : 'error', ms: Date.now() - at };
  }
}

/** Probes `url` back to back (every `intervalMs` at most) until stopped; every answer is kept. */
export class Prober {
  readonly samples: Sample[] = [];
  private running = true;
  private readonly loop: Promise<void>;

  constructor(url: () => string, intervalMs = 200, timeoutMs = 5000) {
    this.loop = (async () => {
      while (this.running) {
        const sample = await timedGet(url(), timeoutMs);
        this.samples.push(sample);
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, intervalMs - sample.ms)));
      }
    })();
  }

  async stop(): Promise<Sample[]> {
    this.running = false;
    await this.loop;
    return this.samples;
  }

  slowestMs(): number {
    return Math.max(0, ...this.samples.map((sample) => sample.ms));
  }

  /** The first sample at or after `since` with `status`. */
  firstSince(since: number, status: Sample['status']): Sample | undefined {
    return this.samples.find((sample) => sample.at >= since && sample.status === status);
  }
}

interface ReceivedRequest {
  webhookId: string;
  invoiceId: string;
  /** Whether the answer was written (false: the caller went away first). */
  answered: boolean;
}

/** A partner's payment endpoint answering 200, the first request for an invoice after `firstDelayMs`; what it received, in order. */
export class PartnerEndpoint {
  readonly received: ReceivedRequest[] = [];
  firstDelayMs = 0;
  url = '';
  private readonly server: Server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const entry = {
      webhookId: String((request.headers as IncomingHttpHeaders)['webhook-id']),
      invoiceId: JSON.parse(Buffer.concat(chunks).toString('utf8')).invoice_id,
      answered: false,
    };
    const first = !this.received.some((request) => request.invoiceId === entry.invoiceId);
    this.received.push(entry);
    if (first) await new Promise((resolve) => setTimeout(resolve, this.firstDelayMs));
    if (response.destroyed || request.socket.destroyed) return;
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ payment_url: `https://pay.example.com/${entry.invoiceId}` }), () => {
      entry.answered = true;
    });
  });

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/payments`;
  }

  /** Waits for a request of each of `invoiceIds` to have arrived, up to `withinMs`. */
  async receivedAll(invoiceIds: string[], withinMs: number): Promise<void> {
    await waitFor(
      'every invoice created to reach its partner',
      () => invoiceIds.every((id) => this.received.some((request) => request.invoiceId === id)),
      withinMs,
    );
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
