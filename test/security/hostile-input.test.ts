// Hostile input answered in the contract (issue 25): paging numbers in decimal only, links that an
// absolute-form request line cannot steer, invisible prompt text, deep JSON refused and stored
// deep payloads shown.
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { connect } from 'node:net';
import { sql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../src/http/json-body.js';
import { CALLBACK_PATH, createInvoice, keyOf, notificationFor } from '../payments/support.js';
import { useApps, useTenant } from '../support/apps.js';
import { TEST_ADMIN_TOKEN } from '../support/env.js';
import { partnerctl } from '../support/process.js';

const service = useApps(['integrations', 'backend', 'admin'], { listen: true });
const tenant = useTenant(service);
let backendKey: string;

beforeAll(async () => {
  backendKey = (await service.admin('POST', '/partner-keys', { name: 'hostile', scopes: ['countries:read'] })).json()
    .key;
});

/**
 * One raw HTTP/1.1 exchange: the request exactly as written (with `Connection: close`), the whole
 * answer as text. The socket stays open for the answer: a client that half-closes first gets none
 * unless the answer is ready in the same tick.
 */
function rawExchange(base: string, request: string): Promise<string> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.on('error', reject);
  });
}

describe('paging numbers', () => {
  it.each(['limit=0x10', 'offset=1e3', 'limit=1.0', 'limit=%2010', 'offset=-0x1', 'limit=1_0'])(
    '%s is refused: 400 VALIDATION_ERROR (integrations), 422 (backend)',
    async (query) => {
      const field = query.split('=')[0];
      const integrations = await service.apps.integrations!.inject({
        url: `/api/v1/countries/?${query}`,
        headers: { authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}` },
      });
      expect(integrations.statusCode).toBe(400);
      expect(integrations.json().error.code).toBe('VALIDATION_ERROR');
      expect(integrations.json().error.details[0]).toMatchObject({ field, location: 'query' });
      const backend = await service.apps.backend!.inject({
        url: `/v1/countries/?${query}`,
        headers: { authorization: `Api-Key ${backendKey}` },
      });
      expect(backend.statusCode).toBe(422);
      expect(backend.json().detail[0].loc).toEqual(['query', field]);
    },
  );

  it('accepts decimal digits, a leading zero included', async () => {
    const response = await service.apps.integrations!.inject({
      url: '/api/v1/countries/?limit=01&offset=0',
      headers: { authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}` },
    });
    expect(response.statusCode).toBe(200);
    expect(response.json().data.next).toMatch(/\?limit=1&offset=1$/);
  });
});

describe('an absolute-form request line', () => {
  it('never reaches the paging links: they are built on the public URL', async () => {
    const answer = await rawExchange(
      service.urls.integrations!,
      'GET http://evil.example/api/v1/countries/?limit=1 HTTP/1.1\r\nHost: evil.example\r\n' +
        `Authorization: Api-Key ${tenant.credentials.sso_hmac_secret}\r\nConnection: close\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
    expect(body.data.next).toBe(`${service.context.publicUrls.integrations}/api/v1/countries/?limit=1&offset=1`);
    expect(answer).not.toContain('evil.example/api');
  });
});

/** `value` inside `depth` levels of alternating arrays and objects. */
function nested(depth: number, value: unknown = 'x'): unknown {
  let result = value;
  for (let level = 0; level < depth; level++) result = level % 2 ? [result] : { d: result };
  return result;
}

describe('JSON nested deeper than the limit', () => {
  const callback = (extra: unknown) =>
    createInvoice(service, tenant).then((invoice) =>
      service.apps.integrations!.inject({
        method: 'POST',
        url: CALLBACK_PATH,
        headers: keyOf(tenant),
        payload: { ...notificationFor(invoice), transaction_id: `txn_${randomUUID()}`, extra },
      }),
    );

  it('is refused 400 in the callback body, whatever the depth; the limit itself is accepted', async () => {
    for (const depth of [MAX_JSON_DEPTH, 3000]) {
      const response = await callback(nested(depth));
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({ error: 'Invalid JSON body' });
    }
    // The body's own object is the first level.
    expect((await callback(nested(MAX_JSON_DEPTH - 1))).statusCode).toBe(200);
  });

  it('is refused 400 in the envelope on /api/v1/ and in the admin body', async () => {
    const deep = `{"language": "en", "text": "hi", "extra": ${'['.repeat(5000)}${']'.repeat(5000)}}`;
    const integrations = await service.apps.integrations!.inject({
      method: 'POST',
      url: '/api/v1/suggested-prompts/',
      headers: { authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}`, 'content-type': 'application/json' },
      payload: deep,
    });
    expect(integrations.statusCode).toBe(400);
    expect(integrations.json()).toMatchObject({ success: false, error: { code: 'INVALID_JSON' } });
    const admin = await service.apps.admin!.inject({
      method: 'POST',
      url: '/admin/v1/tenants',
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
      payload: deep,
    });
    expect(admin.statusCode).toBe(400);
    expect(admin.json().error.code).toBe('INVALID_JSON');
  });
});

describe('a deep payload stored before the limit', () => {
  let invoiceId: string;
  const depth = 5000;
  beforeAll(async () => {
    const invoice = await createInvoice(service, tenant);
    invoiceId = invoice.id;
    const payload = `${'['.repeat(depth)}1.50${']'.repeat(depth)}`;
    await service.context.db.execute(
      sql`insert into payment_events (tenant_id, invoice_id, transaction_id, status, gateway, payload, applied,
            status_before, status_after)
          values (${tenant.tenant.id}, ${invoiceId}, 'txn_deep', 'paid', 'tap', ${payload}::jsonb, false,
            'pending', 'pending')`,
    );
  });

  it('is shown by the admin API as its JSON text', async () => {
    const response = await service.admin('GET', `/invoices/${invoiceId}`);
    expect(response.statusCode).toBe(200);
    const [event] = response.json().events;
    expect(event.transaction_id).toBe('txn_deep');
    expect(typeof event.payload).toBe('string');
    expect(event.payload.startsWith('[[[')).toBe(true);
  });

  it("is shown on the console's invoice page", async () => {
    const signIn = await service.apps.admin!.inject({
      method: 'POST',
      url: '/console/sign-in',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `token=${encodeURIComponent(TEST_ADMIN_TOKEN)}`,
    });
    expect(signIn.statusCode).toBe(303);
    const cookie = signIn.cookies.map(({ name, value }) => `${name}=${value}`).join('; ');
    const page = await service.apps.admin!.inject({ url: `/console/invoices/${invoiceId}`, headers: { cookie } });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('txn_deep');
    expect(page.body).toContain('[[[[');
  });

  it('is listed by partnerctl events list', async () => {
    const listed = await partnerctl(['events', 'list', '--invoice', invoiceId, '--json'], {
      ADMIN_URL: service.urls.admin!,
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    });
    expect(listed.stderr).toBe('');
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout).events[0].transaction_id).toBe('txn_deep');
  });
});

describe('payment callback extra fields and bytes', () => {
  const send = async (payload: string | Buffer) => {
    const response = await service.apps.integrations!.inject({
      method: 'POST',
      url: CALLBACK_PATH,
      headers: { ...keyOf(tenant), 'content-type': 'application/json' },
      payload,
    });
    return { status: response.statusCode, body: response.json() };
  };
  const storedEvents = async (invoiceId: string) =>
    (await service.admin('GET', `/invoices/${invoiceId}`)).json().events;

  it('stores extra strings whole, keys included, as long as the body allows (spec 4.6: stored in full)', async () => {
    const invoice = await createInvoice(service, tenant);
    const extra = { raw_response: 'x'.repeat(50_000), gateway_data: ['y'.repeat(4097)], ['k'.repeat(4097)]: 1 };
    const body = JSON.stringify({ ...notificationFor(invoice), extra });
    expect(await send(body)).toEqual({ status: 200, body: { status: 'success' } });
    const [event] = await storedEvents(invoice.id);
    expect(event.payload.extra).toEqual(extra);
    // What PostgreSQL cannot store is refused, at any depth.
    const other = await createInvoice(service, tenant);
    const refused = JSON.stringify({ ...notificationFor(other), extra: { deep: ['a\u0000b'] } });
    expect(await send(refused)).toEqual({ status: 400, body: { error: 'Invalid JSON body' } });
    expect(await storedEvents(other.id)).toEqual([]);
  });

  it('refuses invalid UTF-8 as Invalid JSON body: two byte strings never share one dedupe key', async () => {
    const invoice = await createInvoice(service, tenant);
    const withTransactionBytes = (bytes: number[]) => {
      const [head, tail] = JSON.stringify(notificationFor(invoice, { transaction_id: 'txn-@' })).split('@');
      return Buffer.concat([Buffer.from(head), Buffer.from(bytes), Buffer.from(tail)]);
    };
    for (const bytes of [[0xff], [0xfe], [0xc3], [0xed, 0xa0, 0x80]]) {
      expect(await send(withTransactionBytes(bytes))).toEqual({ status: 400, body: { error: 'Invalid JSON body' } });
    }
    expect(await storedEvents(invoice.id)).toEqual([]);
    // Valid UTF-8, a BOM before the body included, is read as sent.
    const valid = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), withTransactionBytes([0xc3, 0xa9])]);
    expect(await send(valid)).toEqual({ status: 200, body: { status: 'success' } });
    expect((await storedEvents(invoice.id))[0].transaction_id).toBe('txn-é');
  });

  it('refuses invalid UTF-8 on /api/v1/ as INVALID_JSON', async () => {
    const response = await service.apps.integrations!.inject({
      method: 'POST',
      url: '/api/v1/suggested-prompts/',
      headers: { authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}`, 'content-type': 'application/json' },
      payload: Buffer.concat([Buffer.from('{"language": "en", "text": "a'), Buffer.from([0xff]), Buffer.from('"}')]),
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe('INVALID_JSON');
  });
});

describe('requests refused before routing', () => {
  const hosts = [
    {
      name: 'integrations /api/v1/',
      host: 'integrations' as const,
      path: '/api/v1/countries/',
      body: (code: string) => ({ success: false, data: null, error: { code } }),
    },
    {
      name: 'payment callback',
      host: 'integrations' as const,
      path: '/api/v1/payments/notify/',
      body: (code: string) => ({
        error: { MALFORMED_REQUEST: 'Malformed request', HEADERS_TOO_LARGE: 'Request header fields too large' }[code],
      }),
    },
    { name: 'backend', host: 'backend' as const, path: '/v1/countries/', body: () => ({ detail: expect.any(String) }) },
    {
      name: 'admin',
      host: 'admin' as const,
      path: '/admin/v1/tenants',
      body: (code: string) => ({ error: { code, message: expect.any(String) } }),
    },
  ];
  const parse = (answer: string) => ({
    status: Number(answer.slice(9, 12)),
    body: JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)),
  });

  it.each(hosts.map((host) => [host.name, host] as const))(
    '%s: a bad percent-escape is a 400 and headers too large a 431, in the host body',
    async (_name, { host, path, body }) => {
      const base = service.urls[host]!;
      const malformed = parse(
        await rawExchange(base, `GET ${path}%ZZ/?x=1 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`),
      );
      expect(malformed).toMatchObject({ status: 400, body: body('MALFORMED_REQUEST') });
      const large = parse(
        await rawExchange(
          base,
          `GET ${path} HTTP/1.1\r\nHost: localhost\r\nX-Filler: ${'a'.repeat(20_000)}\r\nConnection: close\r\n\r\n`,
        ),
      );
      expect(large).toMatchObject({ status: 431, body: body('HEADERS_TOO_LARGE') });
    },
  );
});

/** Tries of a refused body under `Connection: close`: each lost its 413 now and then before the fix. */
const TRIES = 60;
const AT_ONCE = 6;

describe('a body refused while the client is still sending it', () => {
  /** A body of `chunks` 64 KiB chunks, each a few milliseconds after the last, as a slow uplink sends. */
  const slowBody = (chunks: number) => {
    let sent = 0;
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (sent++ === 0) controller.enqueue(new TextEncoder().encode('{"language": "en", "text": "'));
        await new Promise((resolve) => setTimeout(resolve, 3));
        if (sent > chunks) controller.close();
        else controller.enqueue(new Uint8Array(64 * 1024).fill(0x78));
      },
    });
  };
  const post = (body: BodyInit) =>
    fetch(`${service.urls.integrations}/api/v1/suggested-prompts/`, {
      method: 'POST',
      headers: { authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}`, 'content-type': 'application/json' },
      body,
      duplex: 'half',
    } as RequestInit);

  it("reaches Node's fetch as the host's 413, streamed or with a length, and the connection stays usable", async () => {
    const streamed = await post(slowBody(40));
    expect(streamed.status).toBe(413);
    expect((await streamed.json()).error.code).toBe('PAYLOAD_TOO_LARGE');
    const large = JSON.stringify({ language: 'en', text: 'x'.repeat(12 * 1024 * 1024) });
    for (let attempt = 0; attempt < 3; attempt++) {
      const response = await post(large);
      expect(response.status).toBe(413);
      expect((await response.json()).error.code).toBe('PAYLOAD_TOO_LARGE');
    }
    expect((await post(JSON.stringify({ language: 'en', text: 'after the refusals' }))).status).toBe(201);
  });

  it("reaches Node's http client as the 413 on every try when the request asked Connection: close", async () => {
    const { hostname, port } = new URL(service.urls.integrations!);
    const body = Buffer.from(JSON.stringify({ language: 'en', text: 'x'.repeat(12 * 1024 * 1024) }));
    /**
     * One request on a connection of its own, followed to the end of its connection: the status
     * read, and any error the client met sending the body (the server closed before reading it).
     */
    const once = () =>
      new Promise<string>((resolve) => {
        let status = 'no answer';
        let failure = '';
        const sent = request(
          {
            host: hostname,
            port,
            method: 'POST',
            path: '/api/v1/suggested-prompts/',
            agent: false,
            headers: {
              authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}`,
              'content-type': 'application/json',
              'content-length': body.length,
              connection: 'close',
            },
          },
          (response) => {
            status = String(response.statusCode);
            response.resume();
          },
        );
        sent.on('error', (error: NodeJS.ErrnoException) => {
          failure = ` then ${error.code ?? error.message}`;
        });
        sent.on('close', () => resolve(`${status}${failure}`));
        sent.end(body);
      });
    const outcomes = new Map<string, number>();
    // A few at once, as clients come: each on its own connection.
    for (let round = 0; round < TRIES / AT_ONCE; round++) {
      for (const outcome of await Promise.all(Array.from({ length: AT_ONCE }, once))) {
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
      }
    }
    console.log(
      `Connection: close, 12 MiB: ${[...outcomes].map(([outcome, count]) => `${count}x ${outcome}`).join(', ')}`,
    );
    expect(Object.fromEntries(outcomes)).toEqual({ 413: TRIES });
  });
});
