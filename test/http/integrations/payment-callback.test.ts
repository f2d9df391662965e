// The payment callback over HTTP: every row of spec 7.3 and every step of DECISIONS §4, with the
// exact status codes and bodies, and the full forward-only state table.
import { sql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  CALLBACK_PATH,
  createInvoice,
  createTrip,
  type InvoiceJson,
  keyOf,
  notificationFor,
  notify,
  showInvoice,
  tripStatus,
} from '../../payments/support.js';
import { useApps, useTenant } from '../../support/apps.js';
import { waitFor } from '../../support/partner-endpoint.js';

const service = useApps(['integrations', 'admin'], { listen: true });
const tenant = useTenant(service, { gateway: 'tap' });
const other = useTenant(service, { gateway: 'tap' });
let invoice: InvoiceJson;

beforeAll(async () => {
  invoice = await createInvoice(service, tenant);
});

const expectAnswer = (response: { statusCode: number; json(): unknown }, status: number, body: unknown) => {
  expect({ status: response.statusCode, body: response.json() }).toEqual({ status, body });
};

describe('step 1: X-API-KEY', () => {
  it('answers 401 Missing API key without the header, even with a bad body', async () => {
    expectAnswer(await notify(service, notificationFor(invoice), {}), 401, { error: 'Missing API key' });
    expectAnswer(await notify(service, '{bad json', {}), 401, { error: 'Missing API key' });
    expectAnswer(await notify(service, notificationFor(invoice), { 'x-api-key': '' }), 401, {
      error: 'Missing API key',
    });
  });

  it('treats `Authorization: Api-Key` alone as missing, with either secret', async () => {
    for (const secret of [tenant.credentials.partner_api_key, tenant.credentials.sso_hmac_secret]) {
      const response = await notify(service, notificationFor(invoice), { authorization: `Api-Key ${secret}` });
      expectAnswer(response, 401, { error: 'Missing API key' });
    }
  });

  it('answers 401 Unauthorized for an unknown key, another kind of secret, or a bad body with a bad key', async () => {
    for (const key of [
      'pis_pay_unknown',
      'nonsense',
      tenant.credentials.sso_hmac_secret,
      tenant.credentials.payment_endpoint_secret,
    ]) {
      expectAnswer(await notify(service, notificationFor(invoice), { 'x-api-key': key }), 401, {
        error: 'Unauthorized',
      });
    }
    expectAnswer(await notify(service, '{bad json', { 'x-api-key': 'pis_pay_unknown' }), 401, {
      error: 'Unauthorized',
    });
  });

  it("answers 401 Unauthorized for an inactive tenant's key, and accepts it again once reactivated", async () => {
    const inactive = await service.createTenant({ gateway: 'tap' });
    const its = await createInvoice(service, inactive);
    await service.admin('PATCH', `/tenants/${inactive.tenant.id}`, { is_active: false });
    expectAnswer(await notify(service, notificationFor(its), keyOf(inactive)), 401, { error: 'Unauthorized' });
    await service.admin('PATCH', `/tenants/${inactive.tenant.id}`, { is_active: true });
    expectAnswer(await notify(service, notificationFor(its), keyOf(inactive)), 200, { status: 'success' });
  });
});

describe('step 2: a JSON object body', () => {
  it.each([
    ['malformed JSON', '{"invoice_id": '],
    ['an array', '[]'],
    ['a string', '"paid"'],
    ['a number', '42'],
    ['null', 'null'],
    ['an empty body', ''],
    ['prototype poisoning', '{"__proto__": {"admin": true}, "invoice_id": "x"}'],
    ['a repeated key with different values', '{"status": "paid", "status": "failed"}'],
  ])('answers 400 Invalid JSON body for %s', async (_case, body) => {
    expectAnswer(await notify(service, body, keyOf(tenant)), 400, { error: 'Invalid JSON body' });
  });

  it('answers 400 Invalid JSON body without a body, and for a body that is not declared JSON', async () => {
    const bare = await service.apps.integrations!.inject({
      method: 'POST',
      url: CALLBACK_PATH,
      headers: keyOf(tenant),
    });
    expectAnswer(bare, 400, { error: 'Invalid JSON body' });
    const text = await service.apps.integrations!.inject({
      method: 'POST',
      url: CALLBACK_PATH,
      headers: { ...keyOf(tenant), 'content-type': 'text/plain' },
      payload: JSON.stringify(notificationFor(invoice)),
    });
    expectAnswer(text, 400, { error: 'Invalid JSON body' });
  });

  it('answers 413 for a body over 64 KiB, without the envelope', async () => {
    const response = await notify(service, notificationFor(invoice, { padding: 'x'.repeat(70_000) }), keyOf(tenant));
    expectAnswer(response, 413, { error: 'Payload too large' });
  });
});

describe('step 3: required fields, in order', () => {
  const fields = ['invoice_id', 'transaction_id', 'status', 'amount', 'currency', 'gateway'];

  it.each(
    fields.flatMap((field) => [
      [field, 'absent', undefined],
      [field, 'null', null],
      [field, 'empty', ''],
    ]),
  )('answers 400 Missing %s when it is %s', async (field, _how, value) => {
    const body = notificationFor(invoice);
    if (value === undefined) delete body[field];
    else body[field] = value;
    expectAnswer(await notify(service, body, keyOf(tenant)), 400, { error: `Missing ${field}` });
  });

  it.each([
    ['invoice_id', 123],
    ['invoice_id', ['a']],
    ['transaction_id', 42],
    ['status', { value: 'paid' }],
    ['status', true],
    ['amount', true],
    ['amount', { value: '100.00' }],
    ['amount', ['100.00']],
    ['currency', 682],
    ['gateway', false],
  ])('answers 400 Invalid %s for a value of the wrong type (%j)', async (field, value) => {
    expectAnswer(await notify(service, notificationFor(invoice, { [field]: value }), keyOf(tenant)), 400, {
      error: `Invalid ${field}`,
    });
  });

  it('reports the first failing field in the documented order', async () => {
    const body = { invoice_id: 'not-a-uuid', status: 5, amount: null };
    expectAnswer(await notify(service, body, keyOf(tenant)), 400, { error: 'Missing transaction_id' });
    const typed = { invoice_id: 'x', transaction_id: 't', status: 5, currency: 1 };
    expectAnswer(await notify(service, typed, keyOf(tenant)), 400, { error: 'Invalid status' });
  });
});

describe('steps 4 to 8: the invoice', () => {
  it('answers 404 Invoice not found for a malformed and for an unknown invoice id', async () => {
    for (const id of ['not-a-uuid', '12345', '00000000-0000-4000-8000-000000000000']) {
      expectAnswer(await notify(service, notificationFor(invoice, { invoice_id: id }), keyOf(tenant)), 404, {
        error: 'Invoice not found',
      });
    }
  });

  it("answers 403 Forbidden for another tenant's invoice, before looking at gateway, amount or currency", async () => {
    const body = notificationFor(invoice, { gateway: 'hyperpay', amount: '1.00', currency: 'USD' });
    expectAnswer(await notify(service, body, keyOf(other)), 403, { error: 'Forbidden' });
  });

  it("answers 400 Gateway mismatch when the gateway is not the tenant's, checked before amount", async () => {
    for (const gateway of ['hyperpay', 'TAP', ' tap', 'unknown']) {
      const body = notificationFor(invoice, { gateway, amount: '1.00' });
      expectAnswer(await notify(service, body, keyOf(tenant)), 400, { error: 'Gateway mismatch' });
    }
  });

  it.each([
    ['"100.001"', '"100.001"'],
    ['100.001', '100.001'],
    ['"99.99"', '"99.99"'],
    ['-100', '-100'],
    ['"abc"', '"abc"'],
    ['"1e2" (a string is never exponent notation)', '"1e2"'],
    ['" 100.00"', '" 100.00"'],
    ['"100.00 SAR"', '"100.00 SAR"'],
    ['100.0000000000000000001', '100.0000000000000000001'],
  ])('answers 400 Amount mismatch for %s against 100.00', async (_case, amountJson) => {
    const body = JSON.stringify({ ...notificationFor(invoice, { currency: 'XXX' }), amount: '§' }).replace(
      '"§"',
      amountJson,
    );
    expectAnswer(await notify(service, body, keyOf(tenant)), 400, { error: 'Amount mismatch' });
  });

  it('answers 400 Currency mismatch for any other currency text, after the amount', async () => {
    for (const currency of ['USD', 'sar', 'SAR ', 'SA']) {
      expectAnswer(await notify(service, notificationFor(invoice, { currency }), keyOf(tenant)), 400, {
        error: 'Currency mismatch',
      });
    }
  });

  it('stores nothing for a rejected notification', async () => {
    const fresh = await createInvoice(service, tenant);
    await notify(service, notificationFor(fresh, { amount: '1.00' }), keyOf(tenant));
    await notify(service, notificationFor(fresh, { currency: 'USD' }), keyOf(tenant));
    const shown = await showInvoice(service, fresh.id);
    expect(shown.events).toEqual([]);
    expect(shown.invoice.status).toBe('pending');
  });
});

describe('amounts compared as exact decimals', () => {
  it.each([
    [
      'SAR',
      '100.00',
      ['"100.00"', '"100"', '"100.0"', '"100.000"', '100', '100.0', '100.00', '10000e-2', '1e2', '1.00E+2'],
    ],
    ['SAR', '100.10', ['"100.1"', '"100.10"', '100.1', '100.10', '100.100']],
    ['KWD', '12.500', ['"12.5"', '"12.500"', '12.5', '12.50', '12.500']],
    ['JPY', '1500', ['"1500"', '1500', '"1500.0"', '1500.00']],
  ])('accepts every spelling of %s %s', async (currency, amount, spellings) => {
    const its = await createInvoice(service, tenant, { amount, currency });
    for (const spelling of spellings) {
      // An unknown status stores the event without a transition: every spelling is judged alone.
      const body = JSON.stringify({ ...notificationFor(its, { status: 'authorized' }), amount: '§' }).replace(
        '"§"',
        spelling,
      );
      expectAnswer(await notify(service, body, keyOf(tenant)), 200, { status: 'success' });
    }
    const shown = await showInvoice(service, its.id);
    expect(shown.events).toHaveLength(spellings.length);
  });

  it.each([
    ['KWD', '12.500', ['"12.501"', '12.5001', '"12.05"']],
    ['JPY', '1500', ['"1500.01"', '1501', '"15.00"']],
  ])('refuses near misses for %s %s', async (currency, amount, spellings) => {
    const its = await createInvoice(service, tenant, { amount, currency });
    for (const spelling of spellings) {
      const body = JSON.stringify({ ...notificationFor(its), amount: '§' }).replace('"§"', spelling);
      expectAnswer(await notify(service, body, keyOf(tenant)), 400, { error: 'Amount mismatch' });
    }
  });
});

describe('steps 9 and 10: success, duplicates and the stored event', () => {
  it('answers success, then duplicate for the same (transaction_id, status, gateway), with one event', async () => {
    const its = await createInvoice(service, tenant);
    const body = notificationFor(its, { transaction_id: 'txn-dup-1' });
    expectAnswer(await notify(service, body, keyOf(tenant)), 200, { status: 'success' });
    expectAnswer(await notify(service, body, keyOf(tenant)), 200, { status: 'duplicate' });
    // Amount spelled differently, extra fields: still the same tuple.
    expectAnswer(await notify(service, { ...body, amount: 100, extra: 1 }, keyOf(tenant)), 200, {
      status: 'duplicate',
    });
    const shown = await showInvoice(service, its.id);
    expect(shown.events).toHaveLength(1);
    expect(shown.invoice).toMatchObject({ status: 'paid', gateway_reference: 'txn-dup-1' });
  });

  it('treats another status or gateway of the same transaction as a new notification', async () => {
    const its = await createInvoice(service, tenant);
    const body = notificationFor(its, { transaction_id: 'txn-dup-2' });
    expectAnswer(await notify(service, body, keyOf(tenant)), 200, { status: 'success' });
    expectAnswer(await notify(service, { ...body, status: 'refunded' }, keyOf(tenant)), 200, { status: 'success' });
    expect((await showInvoice(service, its.id)).events.map((event) => event.status)).toEqual(['paid', 'refunded']);
  });

  it("scopes the duplicate tuple per tenant: another tenant's identical tuple is its own", async () => {
    const mine = await createInvoice(service, tenant);
    const theirs = await createInvoice(service, other);
    const tuple = { transaction_id: 'txn-shared', status: 'paid', gateway: 'tap' };
    expectAnswer(await notify(service, notificationFor(mine, tuple), keyOf(tenant)), 200, { status: 'success' });
    expectAnswer(await notify(service, notificationFor(theirs, tuple), keyOf(other)), 200, { status: 'success' });
    expect((await showInvoice(service, theirs.id)).invoice.status).toBe('paid');
  });

  it('stores the full payload as received, extra fields and number digits included, with every audit field', async () => {
    const its = await createInvoice(service, tenant, { amount: '100.10' });
    const body =
      `{"invoice_id":"${its.id}","transaction_id":"txn-audit","status":"paid","amount":100.10,"currency":"SAR",` +
      `"gateway":"tap","gateway_data":{"card":{"brand":"visa","last4":"4242"},"fee":2.50,"big":12345678901234567890}}`;
    const response = await notify(service, body, { ...keyOf(tenant), 'x-request-id': 'req-audit-1' });
    expectAnswer(response, 200, { status: 'success' });
    const shown = await showInvoice(service, its.id);
    expect(shown.events).toHaveLength(1);
    expect(shown.events[0]).toMatchObject({
      tenant_id: tenant.tenant.id,
      invoice_id: its.id,
      transaction_id: 'txn-audit',
      status: 'paid',
      gateway: 'tap',
      applied: true,
      status_before: 'pending',
      status_after: 'paid',
      request_id: 'req-audit-1',
    });
    expect(Date.parse(shown.events[0].received_at)).not.toBeNaN();
    const { gateway_data } = shown.events[0].payload as { gateway_data: { card: unknown } };
    expect(gateway_data.card).toEqual({ brand: 'visa', last4: '4242' });
    // The digits as sent: 100.10 (not 100.1), 2.50, and a 20-digit integer intact.
    expect(shown.raw).toContain('"amount":100.10');
    expect(shown.raw).toContain('"fee":2.50');
    expect(shown.raw).toContain('"big":12345678901234567890');
  });

  it('answers 400 Invalid JSON body for a valid notification carrying a number PostgreSQL cannot store', async () => {
    const its = await createInvoice(service, tenant);
    const body = JSON.stringify(notificationFor(its, { extra: '§' })).replace('"§"', '1e999999');
    expectAnswer(await notify(service, body, keyOf(tenant)), 400, { error: 'Invalid JSON body' });
    expect((await showInvoice(service, its.id)).events).toEqual([]);
  });

  it("answers on the path without the trailing slash too, in the callback's own body", async () => {
    const its = await createInvoice(service, tenant);
    const response = await notify(service, notificationFor(its), keyOf(tenant), '/api/v1/payments/notify');
    expectAnswer(response, 200, { status: 'success' });
    expect(response.json()).not.toHaveProperty('success');
  });

  it("answers other methods 405 in the callback's own body, after the key check", async () => {
    for (const method of ['GET', 'PUT', 'DELETE'] as const) {
      const keyed = await service.apps.integrations!.inject({ method, url: CALLBACK_PATH, headers: keyOf(tenant) });
      expectAnswer(keyed, 405, { error: 'Method not allowed' });
      expect(keyed.headers.allow).toBe('POST');
      expectAnswer(await service.apps.integrations!.inject({ method, url: CALLBACK_PATH }), 401, {
        error: 'Missing API key',
      });
    }
  });

  it('is documented in the OpenAPI document with its own key and bodies', async () => {
    const document = (await service.apps.integrations!.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const operation = document.paths['/api/v1/payments/notify/'].post;
    expect(operation.security).toEqual([{ PartnerApiKey: [] }]);
    expect(Object.keys(operation.responses).sort()).toEqual(['200', '400', '401', '403', '404', '413', '429', '503']);
    const body = operation.requestBody.content['application/json'].schema;
    expect(body.additionalProperties).toBe(true);
    expect(Object.keys(body.properties)).toEqual([
      'invoice_id',
      'transaction_id',
      'status',
      'amount',
      'currency',
      'gateway',
    ]);
  });

  it('works over real HTTP', async () => {
    const its = await createInvoice(service, tenant);
    const response = await fetch(`${service.urls.integrations}${CALLBACK_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...keyOf(tenant) },
      body: JSON.stringify(notificationFor(its)),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'success' });
  });
});

describe('a statement the database cancels', () => {
  it('answers 503 Service unavailable with Retry-After and stores nothing; the same notification succeeds later', async () => {
    const its = await createInvoice(service, tenant);
    const { database, db } = service.context;
    // The store waits for the invoice's row lock, held here, and is cancelled while it waits, as an
    // operator's pg_cancel_backend or a `systemctl stop` signalling every backend would.
    const response = await db.transaction(async (tx) => {
      await tx.execute(sql`select id from invoices where id = ${its.id} for update`);
      const answer = notify(service, notificationFor(its), keyOf(tenant));
      const cancelled = await waitFor('the store waiting for the invoice lock', async () => {
        const { rows } = await database.executeSql<{ cancelled: boolean }>(
          `select pg_cancel_backend(pid) as cancelled from pg_stat_activity
           where datname = current_database() and wait_event_type = 'Lock'
             and query like '%store_payment_notifications%'`,
        );
        return rows.length > 0 && rows.every((row) => row.cancelled);
      });
      expect(cancelled).toBe(true);
      return answer;
    });

    expectAnswer(response, 503, { error: 'Service unavailable' });
    expect(response.headers['retry-after']).toBe('1');
    expect((await showInvoice(service, its.id)).events).toEqual([]);
    expectAnswer(await notify(service, notificationFor(its), keyOf(tenant)), 200, { status: 'success' });
  });
});

describe('the state table: forward-only transitions (DECISIONS §4), a second payment flagged (§11)', () => {
  type Status = 'pending' | 'failed' | 'paid' | 'refunded';
  /** Notifications that bring a fresh invoice to each status. */
  const SETUP: Record<Status, string[]> = {
    pending: [],
    failed: ['failed'],
    paid: ['paid'],
    refunded: ['paid', 'refunded'],
  };
  const RANK: Record<Status, number> = { pending: 0, failed: 1, paid: 2, refunded: 3 };
  const MAPPED: Record<string, Status | null> = {
    paid: 'paid',
    failed: 'failed',
    cancelled: 'failed',
    refunded: 'refunded',
    authorized: null,
  };
  const TRIP_OF: Record<Status, string> = {
    pending: 'pending_payment',
    failed: 'pending_payment',
    paid: 'booked',
    refunded: 'cancelled',
  };

  const cases = (Object.keys(SETUP) as Status[]).flatMap((current) =>
    Object.keys(MAPPED).map((notified) => [current, notified] as const),
  );

  it.each(cases)('%s invoice notified %s', async (current, notified) => {
    const trip = await createTrip(service, tenant);
    const its = await createInvoice(service, tenant, { trip_id: trip.id });
    expect(await tripStatus(service, trip.id)).toBe('pending_payment');
    for (const [index, status] of SETUP[current].entries()) {
      const body = notificationFor(its, { status, transaction_id: `setup-${its.id}-${index}` });
      expectAnswer(await notify(service, body, keyOf(tenant)), 200, { status: 'success' });
    }
    const before = (await showInvoice(service, its.id)).invoice;
    expect(before.status).toBe(current);

    const transactionId = `final-${its.id}`;
    const answer = await notify(
      service,
      notificationFor(its, { status: notified, transaction_id: transactionId }),
      keyOf(tenant),
    );
    expectAnswer(answer, 200, { status: 'success' });

    const mapped = MAPPED[notified];
    // A second paid, under another transaction (DECISIONS §11): a possible double charge, not applied.
    const secondPayment = mapped === 'paid' && current === 'paid';
    const applied = mapped !== null && RANK[mapped] >= RANK[current] && !secondPayment;
    const expected = applied ? mapped! : current;
    const shown = await showInvoice(service, its.id);
    expect(shown.invoice.status).toBe(expected);
    expect(shown.invoice.gateway_reference).toBe(applied ? transactionId : before.gateway_reference);
    // paid_at records when the invoice first became paid: a later event never moves or clears it.
    if (before.paid_at) expect(shown.invoice.paid_at).toBe(before.paid_at);
    else if (expected === 'paid') expect(shown.invoice.paid_at).not.toBeNull();
    else expect(shown.invoice.paid_at).toBeNull();
    expect(await tripStatus(service, trip.id)).toBe(TRIP_OF[expected]);
    const event = shown.events.find((candidate) => candidate.transaction_id === transactionId)!;
    expect(event).toMatchObject({ status: notified, applied, status_before: current, status_after: expected });
    const reason = applied
      ? null
      : mapped === null
        ? 'unknown_status'
        : secondPayment
          ? 'possible_double_charge'
          : 'status_behind';
    expect(event.not_applied_reason).toBe(reason);
    expect(shown.invoice.possible_double_charge).toBe(secondPayment);
  });
});
