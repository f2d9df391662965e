// A partner's payment endpoint on loopback for tests: it verifies the Standard Webhooks signature
// as a partner would and answers a script of replies per path.
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** What the partner's endpoint received, and whether each signing secret verified it. */
export interface Received {
  body: Record<string, unknown>;
  /** The body as it came, byte for byte. */
  raw: string;
  headers: http.IncomingHttpHeaders;
  verifiedWith: boolean[];
}

/** A reply; a string body is sent as is, anything else as JSON. */
export type Reply = { status: number; body?: unknown; headers?: Record<string, string> };

/** An HTTP server on a free loopback port for a test's partners; subclasses answer the requests. */
export abstract class LoopbackServer {
  private readonly server = http.createServer((request, response) => this.handle(request, response));
  url = '';

  async start() {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  stop() {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(resolve));
  }

  protected abstract handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void>;
}

/** A partner endpoint: per path, a script of replies (the last one repeats) and what came in. */
export class PartnerEndpoint extends LoopbackServer {
  readonly received = new Map<string, Received[]>();
  readonly scripts = new Map<string, Reply[]>();
  readonly secrets = new Map<string, string[]>();

  /** A path answering `replies` in turn, whose requests are verified against `secrets`. */
  route(path: string, secrets: string[], replies: Reply[]): string {
    this.scripts.set(path, replies);
    this.secrets.set(path, secrets);
    this.received.set(path, []);
    return `${this.url}${path}`;
  }

  protected async handle(request: http.IncomingMessage, response: http.ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const path = request.url ?? '';
    const log = this.received.get(path) ?? [];
    const verifiedWith = (this.secrets.get(path) ?? []).map((secret) => {
      try {
        new Webhook(secret).verify(raw, request.headers as Record<string, string>);
        return true;
      } catch {
        return false;
      }
    });
    log.push({ body: JSON.parse(raw), raw, headers: request.headers, verifiedWith });
    const script = this.scripts.get(path) ?? [{ status: 404 }];
    const reply = script[Math.min(log.length - 1, script.length - 1)];
    response.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
    const body =
      reply.body === undefined ? '' : typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
    response.end(body);
  }
}

/** Polls `probe` until it gives a value. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
