// Sending a signed message to a tenant's payment endpoint: the payment request and the ping. The
// host is resolved once and only public addresses are called (endpoint-address.ts); Node's own
// client makes the exchange over a kept connection to the endpoint when one is free, bounded by two
// deadlines: the connection, then the whole exchange. Node's client, not undici's: an attempt costs
// less of the service's CPU with it (BENCHMARKS.md, the drain).
import type { LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { Database } from '../../db/client.js';
import { loggableUrl } from '../../logger.js';
import { inSpan } from '../../tracing.js';
import { EndpointRefusedError, pinnedLookup, resolveEndpoint } from '../endpoint-address.js';
import { signedHeaders } from './sign.js';

/** Per-attempt limit on the whole exchange: connect, send, answer. */
export const REQUEST_TIMEOUT_MS = 15_000;
/** Default limit on connecting (PAYMENT_CONNECT_TIMEOUT_SECONDS): a host that is down frees its slot fast. */
export const CONNECT_TIMEOUT_MS = 3000;
/** More of the endpoint's reply than this is not read (we only want `payment_url`). */
const MAX_REPLY_BYTES = 64 * 1024;

export interface EndpointReply {
  status: number;
  retryAfter: string | undefined;
  body: string;
}

/** What the service needs to sign and send a message to a tenant's payment endpoint. */
export interface SigningDependencies {
  db: Database;
  openSecret: (sealed: string) => string;
  allowPrivateEndpoints: boolean;
  /** PAYMENT_CONNECT_TIMEOUT_SECONDS in ms; CONNECT_TIMEOUT_MS when not given. */
  connectTimeoutMs?: number;
}

/** The signed POST as it went out, `webhook-timestamp` in Unix seconds. */
export interface SentMessage {
  url: string;
  webhookTimestamp: number;
}

/**
 * How one signed POST ended: the endpoint's reply, or why there was none. `sent` is the message
 * once signed, null when the network failed before (the host did not resolve).
 */
export type SignedExchange =
  | { outcome: 'answered'; reply: EndpointReply; latencyMs: number; sent: SentMessage }
  /** Nothing was sent: no endpoint, no secret, or an address we refuse to call. */
  | { outcome: 'not_sent'; error: string }
  | { outcome: 'network_error'; error: string; latencyMs: number; sent: SentMessage | null };

export const isSuccessStatus = (status: number | null) => status !== null && status >= 200 && status < 300;

/** A deadline passed; its message says which, as the attempt records it after the name. */
class DeadlineError extends Error {
  override name = 'TimeoutError';
}

const ANSWER_MISSING = `no complete answer within ${REQUEST_TIMEOUT_MS / 1000} s`;

/**
 * How long a kept connection may wait idle for the endpoint's next request: less than the idle
 * timeout of common servers (Node's 5 s; a shorter one announced in `Keep-Alive` is heeded), so
 * that the endpoint rarely closes one as a request leaves on it.
 */
const IDLE_CONNECTION_MS = 4000;

/**
 * Connections kept between attempts, per endpoint host and port: a partner's endpoint is not asked
 * for a new connection, nor a TLS handshake, per payment request. Each is made to an address the
 * attempt that made it resolved and checked; an endpoint's window bounds how many are in use.
 */
const keptConnections = {
  'http:': new http.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }),
  'https:': new https.Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }),
};

/** A kept connection closed by the endpoint before any answer to the request sent on it. */
class KeptConnectionClosed extends Error {}

/**
 * POSTs `body` to `url`, connecting only to `addresses`. Network failures and timeouts reject. A
 * kept connection the endpoint closes before answering (it timed the connection out as the request
 * left) costs no attempt: the request goes once more, on a new connection. The partner may have
 * had it: it is the same message, `webhook-id` included.
 */
async function postJson(
  url: URL,
  addresses: LookupAddress[],
  headers: Record<string, string>,
  body: string,
  connectTimeoutMs: number,
): Promise<EndpointReply> {
  try {
    return await exchange(url, addresses, headers, body, connectTimeoutMs, true);
  } catch (error) {
    if (!(error instanceof KeptConnectionClosed)) throw error;
    return exchange(url, addresses, headers, body, connectTimeoutMs, false);
  }
}

/** One POST of `body`, on a kept connection if `mayReuse` and one is free, else on a new one. */
function exchange(
  url: URL,
  addresses: LookupAddress[],
  headers: Record<string, string>,
  body: string,
  connectTimeoutMs: number,
  mayReuse: boolean,
): Promise<EndpointReply> {
  const secure = url.protocol === 'https:';
  return new Promise((resolve, reject) => {
    const outgoing = (secure ? https : http).request(url, {
      method: 'POST',
      lookup: pinnedLookup(addresses),
      // `false`: a connection of its own, closed after the answer.
      agent: mayReuse ? keptConnections[secure ? 'https:' : 'http:'] : false,
      headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    let connected = false;
    let answered = false;
    outgoing.once('socket', (socket) => {
      if (outgoing.reusedSocket) connected = true;
      else socket.once(secure ? 'secureConnect' : 'connect', () => (connected = true));
    });
    // One timer for both deadlines, connecting (TLS included) and then the whole exchange: cheaper
    // per attempt than the socket's idle timer or an AbortSignal.
    let deadline = setTimeout(() => {
      if (!connected) {
        outgoing.destroy(new DeadlineError(`no connection within ${connectTimeoutMs / 1000} s`));
      } else {
        deadline = setTimeout(
          () => outgoing.destroy(new DeadlineError(ANSWER_MISSING)),
          REQUEST_TIMEOUT_MS - connectTimeoutMs,
        ).unref();
      }
    }, connectTimeoutMs).unref();
    outgoing.once('close', () => clearTimeout(deadline));
    outgoing.on('error', (error) =>
      reject(
        outgoing.reusedSocket && !answered && !(error instanceof DeadlineError)
          ? new KeptConnectionClosed(error.message, { cause: error })
          : error,
      ),
    );
    outgoing.once('response', (response) => {
      answered = true;
      const chunks: Buffer[] = [];
      let size = 0;
      const answer = () =>
        resolve({
          status: response.statusCode ?? 0,
          retryAfter: response.headers['retry-after'],
          body: Buffer.concat(chunks).subarray(0, MAX_REPLY_BYTES).toString('utf8'),
        });
      response.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
        // Read no further: the connection goes with the rest.
        if (size >= MAX_REPLY_BYTES) {
          answer();
          outgoing.destroy();
        }
      });
      // Read to the end, the connection is kept for the endpoint's next request, or closed.
      response.once('end', answer);
      response.on('error', reject);
    });
    outgoing.end(body);
  });
}

/** Why an exchange failed, as recorded: `<code or name>: <message>`; a deadline is a TimeoutError. */
function failureOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const { code } = error as NodeJS.ErrnoException;
  return `${code ?? error.name}: ${error.message}`;
}

/**
 * POSTs `body` to the tenant's payment endpoint, signed the Standard Webhooks way with every
 * active endpoint secret (`sealedSecrets`, newest first) under `messageId`. Never throws for
 * anything the endpoint or the network does.
 */
export async function sendSignedMessage(
  deps: Omit<SigningDependencies, 'db'>,
  endpoint: { url: string | null; sealedSecrets: string[] },
  messageId: string,
  body: string,
  userAgent: string,
): Promise<SignedExchange> {
  if (!endpoint.url) return { outcome: 'not_sent', error: 'tenant has no payment endpoint configured' };
  const secrets: string[] = [];
  for (const sealed of endpoint.sealedSecrets) {
    try {
      secrets.push(deps.openSecret(sealed));
    } catch (error) {
      // No configured key opens it (SECRET_ENCRYPTION_KEY changed without a rekey): nothing to sign with.
      return { outcome: 'not_sent', error: `payment endpoint secret unreadable: ${(error as Error).message}` };
    }
  }
  if (secrets.length === 0) return { outcome: 'not_sent', error: 'tenant has no active payment endpoint secret' };

  const url = new URL(endpoint.url);
  const connectTimeoutMs = deps.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
  const started = performance.now();
  const latency = () => Math.round(performance.now() - started);
  let sent: SentMessage | null = null;
  try {
    const addresses = await resolveEndpoint(url, deps.allowPrivateEndpoints);
    sent = { url: endpoint.url, webhookTimestamp: Math.floor(Date.now() / 1000) };
    const headers = {
      'user-agent': userAgent,
      ...signedHeaders(secrets, messageId, sent.webhookTimestamp, body),
    };
    // With tracing on, the request names its span as `traceparent` (docs/partners.md).
    const exchange = {
      kind: 'client',
      attributes: { 'http.request.method': 'POST', 'url.full': loggableUrl(endpoint.url) },
    } as const;
    const reply = await inSpan('POST payment endpoint', exchange, (traceparent) =>
      postJson(url, addresses, traceparent ? { ...headers, traceparent } : headers, body, connectTimeoutMs),
    );
    return { outcome: 'answered', reply, latencyMs: latency(), sent };
  } catch (error) {
    if (error instanceof EndpointRefusedError) return { outcome: 'not_sent', error: error.message };
    return { outcome: 'network_error', error: failureOf(error), latencyMs: latency(), sent };
  }
}
