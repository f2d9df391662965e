// partnerctl tools for a partner's developer, usable without an operator's help:
// `receive` stands in for their payment endpoint, `simulate notify` for their payment backend.
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { type AdminClient, CliError } from '../admin-client.js';
import { type Command, type Invocation, type OptionValues, required } from '../command.js';
import type { Row } from '../output.js';

const CALLBACK_PATH = '/api/v1/payments/notify/';
const DEFAULT_INTEGRATIONS_URL = 'http://127.0.0.1:8080';
const MAX_BODY_BYTES = 1024 * 1024;

const text = (options: OptionValues, name: string) =>
  typeof options[name] === 'string' ? (options[name] as string) : undefined;

/** The callback's URL from a base URL (`https://api.example.com`) or the full `notify_url`. */
export function callbackUrl(base: string): string {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw Object.assign(new TypeError(`${base} is not a URL (https://api.example.com, or the notify_url)`), {
      code: 'ERR_INVALID_URL',
    });
  }
  if (url.pathname.replace(/\/+$/, '').endsWith('/payments/notify')) return url.toString();
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}${CALLBACK_PATH}`;
}

/** The invoice's fields from flags, or from the admin API when any is missing (operators). */
async function invoiceFields(invocation: Invocation, invoiceId: string) {
  const { options } = invocation;
  const given = {
    amount: text(options, 'amount'),
    currency: text(options, 'currency'),
    gateway: text(options, 'gateway'),
  };
  if (given.amount && given.currency && given.gateway) {
    return given as { amount: string; currency: string; gateway: string };
  }
  let client: AdminClient;
  try {
    client = invocation.admin();
  } catch (error) {
    throw new CliError(
      '--amount, --currency and --gateway are required, as the payment request gave them; to read them ' +
        `through the admin API instead: ${(error as Error).message}`,
    );
  }
  const { invoice } = await client.request<{ invoice: Row }>('GET', `/invoices/${invoiceId}`);
  const { tenant } = await client.request<{ tenant: Row }>('GET', `/tenants/${invoice.tenant_id}`);
  return {
    amount: given.amount ?? (invoice.amount as string),
    currency: given.currency ?? (invoice.currency as string),
    gateway: given.gateway ?? (tenant.gateway as string),
  };
}

const simulateNotify: Command = {
  name: 'simulate notify',
  summary: 'POST a payment callback for an invoice to the integrations host, as a partner backend would',
  usage:
    '--invoice INVOICE_ID --status paid|failed|cancelled|refunded [--api-key KEY] [--url URL] ' +
    '[--transaction-id ID] [--amount 100.00 --currency SAR --gateway tap]',
  options: {
    invoice: { type: 'string' },
    status: { type: 'string' },
    'api-key': { type: 'string' },
    url: { type: 'string' },
    'transaction-id': { type: 'string' },
    amount: { type: 'string' },
    currency: { type: 'string' },
    gateway: { type: 'string' },
  },
  async run(invocation) {
    const { options } = invocation;
    const invoiceId = required(options, 'invoice');
    const status = required(options, 'status');
    const apiKey = text(options, 'api-key') ?? process.env.PARTNER_API_KEY;
    if (!apiKey) throw new CliError('--api-key (or PARTNER_API_KEY) is required: the partner API key of the tenant');
    const url = callbackUrl(text(options, 'url') ?? process.env.INTEGRATIONS_URL ?? DEFAULT_INTEGRATIONS_URL);
    const body = {
      invoice_id: invoiceId,
      transaction_id: text(options, 'transaction-id') ?? `sim_${randomBytes(8).toString('hex')}`,
      status,
      ...(await invoiceFields(invocation, invoiceId)),
    };
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
        body: JSON.stringify(body),
      });
    } catch (error) {
      throw new CliError(`cannot reach ${url}: ${(error as Error & { cause?: Error }).cause?.message ?? error}`);
    }
    const parsed = parsedOrText(await response.text());
    const human = [
      `POST ${url}`,
      'X-API-KEY: <your partner API key>',
      JSON.stringify(body, null, 2),
      '',
      `HTTP ${response.status}`,
      typeof parsed === 'string' ? parsed : JSON.stringify(parsed),
    ].join('\n');
    invocation.output(human, { request: { url, body }, response: { status: response.status, body: parsed } });
    if (!response.ok) process.exitCode = 1;
  },
};

interface ReceiveSettings {
  webhooks: Webhook[];
  paymentUrl?: string;
  failStatus?: number;
  failTimes: number;
}

interface Delivery {
  received_at: string;
  webhook_id: string | null;
  verified: boolean;
  error?: string;
  body: unknown;
  answered: number;
}

/** Verifies with each secret in turn (several while rotating); the first that matches wins. */
function verify(webhooks: Webhook[], raw: string, headers: http.IncomingHttpHeaders): string | null {
  let failure = 'no webhook-signature matched';
  for (const webhook of webhooks) {
    try {
      webhook.verify(raw, headers as Record<string, string>);
      return null;
    } catch (error) {
      failure = (error as Error).message;
    }
  }
  return failure;
}

function describe(delivery: Delivery): string {
  const body = delivery.body as { type?: string } | null;
  const head = `${delivery.received_at}  ${body?.type ?? '(unknown type)'}  webhook-id ${delivery.webhook_id ?? '(none)'}`;
  const check = delivery.verified ? 'signature verified' : `REFUSED: ${delivery.error}`;
  return `${head}\n  ${check}\n${JSON.stringify(delivery.body, null, 2).replace(/^/gm, '  ')}\n  -> answered ${delivery.answered}\n`;
}

async function readBody(request: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) break;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** JSON when it parses, else the text itself (printed as received). */
function parsedOrText(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

/** The answer to a verified request: a scripted failure while any is left for its webhook-id, else 200. */
function answerFor(settings: ReceiveSettings, failures: Map<string, number>, webhookId: string | null, body: unknown) {
  const failedSoFar = webhookId ? (failures.get(webhookId) ?? 0) : 0;
  if (settings.failStatus && webhookId && failedSoFar < settings.failTimes) {
    failures.set(webhookId, failedSoFar + 1);
    return { status: settings.failStatus, reply: { error: `failing on purpose (--fail ${settings.failStatus})` } };
  }
  const event = body as { type?: unknown; invoice_id?: unknown } | null;
  if (settings.paymentUrl && event?.type === 'payment.requested') {
    const paymentUrl = settings.paymentUrl.replaceAll('{invoice_id}', String(event.invoice_id));
    return { status: 200, reply: { payment_url: paymentUrl } };
  }
  return { status: 200, reply: { received: true } };
}

/** The local endpoint: verify, print, answer (with scripted failures first when asked). */
function receiver(settings: ReceiveSettings, print: (delivery: Delivery) => void) {
  const failures = new Map<string, number>();
  return async (request: http.IncomingMessage, response: http.ServerResponse) => {
    if (request.method !== 'POST') {
      response.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    const raw = await readBody(request);
    const webhookId = typeof request.headers['webhook-id'] === 'string' ? request.headers['webhook-id'] : null;
    const error = verify(settings.webhooks, raw, request.headers);
    const body = parsedOrText(raw);
    const { status, reply } = error
      ? { status: 401, reply: { error: 'invalid signature' } }
      : answerFor(settings, failures, webhookId, body);
    // Printed before answering: by the time the service records the answer, it is on screen.
    print({
      received_at: new Date().toISOString(),
      webhook_id: webhookId,
      verified: !error,
      ...(error && { error }),
      body,
      answered: status,
    });
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
  };
}

function integerOption(options: OptionValues, name: string, min: number, max: number): number | undefined {
  const raw = text(options, name);
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new CliError(`--${name} must be a whole number from ${min} to ${max}`);
  }
  return Number(raw);
}

const receive: Command = {
  name: 'receive',
  summary: 'Run a local payment endpoint that verifies and prints each signed request (Ctrl-C stops it)',
  usage:
    '--secret whsec_... [--secret whsec_...] [--port 9000] [--host 127.0.0.1] [--payment-url URL] ' +
    '[--fail STATUS [--fail-times N]]',
  options: {
    secret: { type: 'string', multiple: true },
    port: { type: 'string' },
    host: { type: 'string' },
    'payment-url': { type: 'string' },
    fail: { type: 'string' },
    'fail-times': { type: 'string' },
  },
  async run(invocation) {
    const { options } = invocation;
    const secrets = (options.secret as string[] | undefined) ?? [];
    if (process.env.PAYMENT_ENDPOINT_SECRET) secrets.push(process.env.PAYMENT_ENDPOINT_SECRET);
    if (secrets.length === 0)
      throw new CliError('--secret (or PAYMENT_ENDPOINT_SECRET) is required: your whsec_ secret');
    let webhooks: Webhook[];
    try {
      webhooks = secrets.map((secret) => new Webhook(secret));
    } catch {
      throw new CliError('--secret must be a Standard Webhooks secret, whsec_ followed by base64');
    }
    const settings: ReceiveSettings = {
      webhooks,
      paymentUrl: text(options, 'payment-url'),
      failStatus: integerOption(options, 'fail', 400, 599),
      failTimes: integerOption(options, 'fail-times', 1, 1000) ?? 1,
    };
    const print = (delivery: Delivery) => console.log(invocation.json ? JSON.stringify(delivery) : describe(delivery));
    const handle = receiver(settings, print);
    const server = http.createServer((request, response) => void handle(request, response));
    server.listen(integerOption(options, 'port', 0, 65535) ?? 9000, text(options, 'host') ?? '127.0.0.1');
    await once(server, 'listening');
    const { address, port } = server.address() as AddressInfo;
    const url = `http://${address.includes(':') ? `[${address}]` : address}:${port}/`;
    const listening = `listening on ${url} (verifying with ${webhooks.length} secret${webhooks.length > 1 ? 's' : ''})`;
    console.log(invocation.json ? JSON.stringify({ listening: url }) : `receive: ${listening}`);
    const stop = () => server.close(() => process.exit(0));
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  },
};

export const partnerToolCommands: Command[] = [simulateNotify, receive];
