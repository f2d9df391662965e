// The partner's own view of its payment conversation (DECISIONS §10) and test mode, in process:
// every callback of an authenticated tenant on record, unknown statuses flagged, and each partner
// endpoint refusing another tenant's objects and the other mode's, as a 404.
import { beforeAll, describe, expect, it } from 'vitest';
import {
  createInvoice,
  createTrip,
  type InvoiceJson,
  notificationFor,
  notify,
  showInvoice,
  tripStatus,
} from '../../payments/support.js';
import { type TestTenant, useApps } from '../../support/apps.js';
import { waitFor } from '../../support/partner-endpoint.js';
import { parsePrometheus } from '../../support/prometheus.js';
import { apiAs, expectError, expectOk } from './api.js';

/** A tenant with its live credentials and a test SSO secret and test partner key issued by the admin API. */
interface ModalTenant extends TestTenant {
  test: { sso: string; partnerKey: string };
}

const service = useApps(['integrations', 'admin']);
let tenant: ModalTenant;
let other: ModalTenant;

async function issue(tenantId: string, kind: string): Promise<string> {
  const response = await service.admin('POST', `/tenants/${tenantId}/credentials`, { kind });
  expect(response.statusCode).toBe(201);
  return response.json().secret;
}

async function modalTenant(): Promise<ModalTenant> {
  const created = await service.createTenant({ gateway: 'tap' });
  const [sso, partnerKey] = await Promise.all([
    issue(created.tenant.id, 'test_sso_hmac_secret'),
    issue(created.tenant.id, 'test_partner_api_key'),
  ]);
  return { ...created, test: { sso, partnerKey } };
}

const live = (who: ModalTenant) => ({
  api: apiAs(service, who.credentials.sso_hmac_secret),
  key: who.credentials.partner_api_key,
});
const test = (who: ModalTenant) => ({ api: apiAs(service, who.test.sso), key: who.test.partnerKey });

async function createTestInvoice(who: ModalTenant, fields: Record<string, unknown> = {}): Promise<InvoiceJson> {
  const data = expectOk<'createTestInvoice'>(
    await test(who).api('POST', '/api/v1/test/invoices/', { amount: '250.00', currency: 'SAR', ...fields }),
    201,
  );
  const shown = await showInvoice(service, data.payment_request.invoice_id);
  return shown.invoice;
}

async function scrape() {
  const response = await service.apps.admin!.inject({ method: 'GET', url: '/metrics' });
  return parsePrometheus(response.body);
}

const answerOf = (response: { statusCode: number; json(): unknown }) => ({
  status: response.statusCode,
  body: response.json(),
});

beforeAll(async () => {
  [tenant, other] = await Promise.all([modalTenant(), modalTenant()]);
});

describe('test credentials', () => {
  it('carry their own readable prefixes and are listed, rotated and revoked like live ones', async () => {
    expect(tenant.test.sso).toMatch(/^pis_test_sso_/);
    expect(tenant.test.partnerKey).toMatch(/^pis_test_pay_/);
    const listed = (await service.admin('GET', `/tenants/${tenant.tenant.id}/credentials`)).json().credentials;
    expect(listed.map((credential: { hint: string }) => credential.hint)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^pis_test_sso_…/), expect.stringMatching(/^pis_test_pay_…/)]),
    );

    const rotated = await modalTenant();
    const second = await issue(rotated.tenant.id, 'test_sso_hmac_secret');
    expectOk(await apiAs(service, rotated.test.sso)('GET', '/api/v1/payment-requests/'));
    expectOk(await apiAs(service, second)('GET', '/api/v1/payment-requests/'));
    const [first] = (await service.admin('GET', `/tenants/${rotated.tenant.id}/credentials`))
      .json()
      .credentials.filter((credential: { kind: string }) => credential.kind === 'test_sso_hmac_secret');
    expect((await service.admin('DELETE', `/credentials/${first.id}`)).statusCode).toBe(200);
    expectError(await apiAs(service, rotated.test.sso)('GET', '/api/v1/payment-requests/'), 401, 'UNAUTHORIZED');
    expectOk(await apiAs(service, second)('GET', '/api/v1/payment-requests/'));
  });

  it('take test_payment_endpoint_url on create and PATCH, under the same rules as the live one', async () => {
    const response = await service.admin('PATCH', `/tenants/${other.tenant.id}`, {
      test_payment_endpoint_url: 'https://sandbox.partner.example/requests',
    });
    expect(response.json().tenant).toMatchObject({
      test_payment_endpoint_url: 'https://sandbox.partner.example/requests',
      payment_endpoint_url: null,
    });
    const refused = await service.admin('PATCH', `/tenants/${other.tenant.id}`, {
      test_payment_endpoint_url: 'ftp://sandbox.partner.example/',
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error.message).toContain('test_payment_endpoint_url');
    const created = await service.admin('POST', '/tenants', {
      name: 'Sandboxed',
      slug: `sandboxed-${Date.now().toString(36)}`,
      gateway: 'tap',
      test_payment_endpoint_url: 'https://sandbox.example/pay',
    });
    expect(created.json().tenant.test_payment_endpoint_url).toBe('https://sandbox.example/pay');
    expect(Object.keys(created.json().credentials).sort()).toEqual([
      'partner_api_key',
      'payment_endpoint_secret',
      'sso_hmac_secret',
      'test_partner_api_key',
      'test_sso_hmac_secret',
    ]);
  });

  it('alone create test invoices: a live secret is a 403 TEST_MODE_ONLY in the envelope', async () => {
    const response = await live(tenant).api('POST', '/api/v1/test/invoices/', { amount: '10.00', currency: 'SAR' });
    expect(expectError(response, 403, 'TEST_MODE_ONLY')).toEqual({ code: 'TEST_MODE_ONLY' });
    const invoice = await createTestInvoice(tenant);
    expect(invoice).toMatchObject({ mode: 'test', amount: '250.00', currency: 'SAR', status: 'pending' });
    expectError(
      await test(tenant).api('POST', '/api/v1/test/invoices/', { amount: '10.001', currency: 'SAR' }),
      400,
      'VALIDATION_ERROR',
    );
    expectError(
      await test(tenant).api('POST', '/api/v1/test/invoices/', {
        amount: '10.00',
        currency: 'SAR',
        tenant_id: other.tenant.id,
      }),
      400,
      'TENANT_NOT_ALLOWED',
    );
  });

  it("move only a test trip of their own; a live trip and another tenant's trip are a 404", async () => {
    const trip = await createTrip(service, tenant, 'test');
    const invoice = await createTestInvoice(tenant, { trip_id: trip.id });
    expect(invoice.trip_id).toBe(trip.id);
    expect(await tripStatus(service, trip.id)).toBe('pending_payment');
    const paid = await notify(service, notificationFor(invoice), { 'x-api-key': tenant.test.partnerKey });
    expect(answerOf(paid)).toEqual({ status: 200, body: { status: 'success' } });
    expect((await showInvoice(service, invoice.id)).invoice.status).toBe('paid');
    expect(await tripStatus(service, trip.id)).toBe('booked');

    for (const named of [await createTrip(service, tenant), await createTrip(service, other, 'test')]) {
      expectError(
        await test(tenant).api('POST', '/api/v1/test/invoices/', {
          amount: '1.00',
          currency: 'SAR',
          trip_id: named.id,
        }),
        404,
        'NOT_FOUND',
      );
      expect(await tripStatus(service, named.id)).toBe('draft');
    }
  });
});

describe('live and test never mix', () => {
  it('a test key can never move a live invoice, nor a live key a test invoice: Invoice not found', async () => {
    const liveInvoice = await createInvoice(service, tenant);
    const testInvoice = await createTestInvoice(tenant);
    for (const [invoice, key] of [
      [liveInvoice, tenant.test.partnerKey],
      [testInvoice, tenant.credentials.partner_api_key],
    ] as const) {
      for (const status of ['paid', 'failed', 'refunded']) {
        const response = await notify(service, notificationFor(invoice, { status }), { 'x-api-key': key });
        expect(answerOf(response)).toEqual({ status: 404, body: { error: 'Invoice not found' } });
      }
      const shown = await showInvoice(service, invoice.id);
      expect(shown.invoice.status).toBe('pending');
      expect(shown.events).toEqual([]);
    }
    // Each in its own mode moves as usual.
    const accepted = await notify(service, notificationFor(testInvoice), { 'x-api-key': tenant.test.partnerKey });
    expect(answerOf(accepted)).toEqual({ status: 200, body: { status: 'success' } });
    expect((await showInvoice(service, testInvoice.id)).invoice.status).toBe('paid');
    expect((await showInvoice(service, liveInvoice.id)).invoice.status).toBe('pending');
  });

  it('keeps duplicates apart too: a tuple received in one mode is new in the other, in either order', async () => {
    const keys = { live: tenant.credentials.partner_api_key, test: tenant.test.partnerKey };
    for (const order of [
      ['test', 'live'],
      ['live', 'test'],
    ] as const) {
      const invoices = { live: await createInvoice(service, tenant), test: await createTestInvoice(tenant) };
      const tuple = { transaction_id: `txn-both-modes-${order[0]}-first`, status: 'paid', gateway: 'tap' };
      const send = (mode: 'live' | 'test') =>
        notify(service, notificationFor(invoices[mode], tuple), { 'x-api-key': keys[mode] });
      for (const mode of order) {
        expect(answerOf(await send(mode))).toEqual({ status: 200, body: { status: 'success' } });
      }
      for (const mode of order) {
        const shown = await showInvoice(service, invoices[mode].id);
        expect(shown.invoice).toMatchObject({ status: 'paid', gateway_reference: tuple.transaction_id });
        expect(shown.events).toHaveLength(1);
        // Within its mode, the tuple is a duplicate as ever.
        expect(answerOf(await send(mode))).toEqual({ status: 200, body: { status: 'duplicate' } });
      }
    }
  });

  it("every partner endpoint answers another tenant's and the other mode's invoice with a 404", async () => {
    const mine = await createInvoice(service, tenant);
    const myTest = await createTestInvoice(tenant);
    const theirs = await createInvoice(service, other);
    const theirTest = await createTestInvoice(other);
    const cases = [
      { as: live(tenant), own: mine, foreign: [myTest, theirs, theirTest] },
      { as: test(tenant), own: myTest, foreign: [mine, theirs, theirTest] },
    ];
    for (const { as, own, foreign } of cases) {
      expectOk(await as.api('GET', `/api/v1/payment-requests/${own.id}/`));
      for (const invoice of foreign) {
        expectError(await as.api('GET', `/api/v1/payment-requests/${invoice.id}/`), 404, 'NOT_FOUND');
        expectError(await as.api('POST', `/api/v1/payment-requests/${invoice.id}/resend/`), 404, 'NOT_FOUND');
      }
      const listed = expectOk<'listPaymentRequests'>(await as.api('GET', '/api/v1/payment-requests/?limit=100'));
      const ids = listed.results.map((request) => request.invoice_id);
      expect(ids).toContain(own.id);
      for (const invoice of foreign) expect(ids).not.toContain(invoice.id);
    }
    expectError(await live(tenant).api('GET', '/api/v1/payment-requests/not-a-uuid/'), 404, 'NOT_FOUND');

    // Callbacks: each log holds only its own tenant's and mode's.
    await notify(service, notificationFor(theirs), { 'x-api-key': other.credentials.partner_api_key });
    await notify(service, notificationFor(theirTest, { amount: '1.00' }), { 'x-api-key': other.test.partnerKey });
    await notify(service, notificationFor(mine, { amount: '1.00' }), {
      'x-api-key': tenant.credentials.partner_api_key,
    });
    await notify(service, notificationFor(myTest), { 'x-api-key': tenant.test.partnerKey });
    await waitFor('the refusals on record', async () => {
      const refused = expectOk<'listPaymentNotifications'>(
        await live(tenant).api('GET', '/api/v1/payment-notifications/?outcome=refused&limit=100'),
      );
      return refused.results.some((entry) => entry.invoice_id === mine.id);
    });
    for (const { as, own, foreign } of cases) {
      const log = expectOk<'listPaymentNotifications'>(await as.api('GET', '/api/v1/payment-notifications/?limit=100'));
      const invoices = log.results.map((entry) => entry.invoice_id);
      expect(invoices).toContain(own.id);
      for (const invoice of foreign) expect(invoices).not.toContain(invoice.id);
    }
  });

  it('resends and pings within the mode: a 409 once an outcome is reported, or with no endpoint of that mode', async () => {
    const invoice = await createTestInvoice(tenant);
    const resent = expectOk<'resendPaymentRequest'>(
      await test(tenant).api('POST', `/api/v1/payment-requests/${invoice.id}/resend/`),
    );
    expect(resent).toEqual({ invoice_id: invoice.id, attempt: 2 });
    await notify(service, notificationFor(invoice, { status: 'failed' }), { 'x-api-key': tenant.test.partnerKey });
    const refused = expectError(
      await test(tenant).api('POST', `/api/v1/payment-requests/${invoice.id}/resend/`),
      409,
      'CONFLICT',
    );
    expect(refused).toEqual({ code: 'CONFLICT' });
    const noEndpoint = await test(tenant).api('POST', '/api/v1/payment-endpoint/ping/');
    expectError(noEndpoint, 409, 'CONFLICT');
    expect(noEndpoint.json().message).toContain('test_payment_endpoint_url');
    expect((await live(tenant).api('POST', '/api/v1/payment-endpoint/ping/')).json().message).toContain(
      'set payment_endpoint_url',
    );
  });
});

describe('every callback of an authenticated tenant on record', () => {
  it('records refusals with our answer, the request id and the payload; the accepted one as an event', async () => {
    const invoice = await createInvoice(service, tenant);
    const key = { 'x-api-key': tenant.credentials.partner_api_key };
    const wrongAmount = notificationFor(invoice, { amount: '99.99', card: { last4: '4242' } });
    const refusedResponse = await notify(service, wrongAmount, key);
    expect(answerOf(refusedResponse)).toEqual({ status: 400, body: { error: 'Amount mismatch' } });
    await notify(service, notificationFor(invoice, { currency: 'USD' }), key);
    const accepted = notificationFor(invoice);
    expect(answerOf(await notify(service, accepted, key))).toEqual({ status: 200, body: { status: 'success' } });

    const shown = await waitFor('both refusals on the invoice', async () => {
      const detail = await showInvoice(service, invoice.id);
      return detail.raw.includes('refused_notifications') && detail.refused_notifications.length === 2 && detail;
    });
    const refused = shown.refused_notifications;
    expect(refused[0]).toMatchObject({
      http_status: 400,
      error: 'Amount mismatch',
      request_id: refusedResponse.headers['x-request-id'] ?? expect.any(String),
      payload_truncated: false,
    });
    expect(JSON.parse(refused[0].payload!)).toEqual(wrongAmount);
    expect(refused[1]).toMatchObject({ http_status: 400, error: 'Currency mismatch' });
    expect(shown.events).toHaveLength(1);
    expect(shown.events[0]).toMatchObject({
      transaction_id: accepted.transaction_id,
      applied: true,
      not_applied_reason: null,
    });

    const log = expectOk<'listPaymentNotifications'>(
      await live(tenant).api('GET', '/api/v1/payment-notifications/?limit=100'),
    );
    const forInvoice = log.results.filter((entry) => entry.invoice_id === invoice.id);
    expect(forInvoice.map((entry) => [entry.outcome, entry.http_status, entry.error])).toEqual([
      ['accepted', 200, null],
      ['refused', 400, 'Currency mismatch'],
      ['refused', 400, 'Amount mismatch'],
    ]);
    const onlyAccepted = expectOk<'listPaymentNotifications'>(
      await live(tenant).api('GET', '/api/v1/payment-notifications/?outcome=accepted&limit=100'),
    );
    expect(onlyAccepted.results.every((entry) => entry.outcome === 'accepted')).toBe(true);
    expectError(
      await live(tenant).api('GET', '/api/v1/payment-notifications/?outcome=duplicate'),
      400,
      'VALIDATION_ERROR',
    );
  });

  it('records refusals that name no invoice of the tenant without one, and never stores unauthenticated callbacks', async () => {
    const fresh = await modalTenant();
    const theirs = await createInvoice(service, other);
    const key = { 'x-api-key': fresh.credentials.partner_api_key };
    expect(answerOf(await notify(service, notificationFor(theirs), key))).toEqual({
      status: 403,
      body: { error: 'Forbidden' },
    });
    await notify(service, notificationFor(theirs, { invoice_id: '00000000-0000-4000-8000-000000000000' }), key);
    await notify(service, '{not json', key);
    // Unauthenticated: counted, never stored.
    const anonymous = notificationFor(theirs, { transaction_id: `anonymous-${Date.now()}` });
    const before = await scrape();
    await notify(service, anonymous, { 'x-api-key': 'pis_pay_nobody' });
    await notify(service, anonymous, {});
    const after = await scrape();
    expect(
      after.value('payment_notifications_total', { outcome: 'Unauthorized', mode: 'none' }) -
        before.value('payment_notifications_total', { outcome: 'Unauthorized', mode: 'none' }),
    ).toBe(1);

    const log = await waitFor('three refusals', async () => {
      const data = expectOk<'listPaymentNotifications'>(
        await apiAs(service, fresh.credentials.sso_hmac_secret)('GET', '/api/v1/payment-notifications/'),
      );
      return data.count === 3 && data;
    });
    expect(log.results.map((entry) => [entry.error, entry.invoice_id]).sort()).toEqual([
      ['Forbidden', null],
      ['Invalid JSON body', null],
      ['Invoice not found', null],
    ]);
    expect(log.results.find((entry) => entry.error === 'Invalid JSON body')?.payload).toBeNull();
    const { rows } = await service.context.database.executeSql(
      'select count(*)::int as stored from refused_notifications where payload like $1',
      [`%${anonymous.transaction_id}%`],
    );
    expect(rows[0].stored).toBe(0);
  });
});

describe('the accepted path', () => {
  it('stores exactly the event it stored before, and no refusal record', async () => {
    const invoice = await createInvoice(service, tenant);
    const body = notificationFor(invoice);
    // Numbers as sent: 100.0 and 2.50 keep their digits in the stored payload.
    const raw = JSON.stringify({ ...body, amount: 0 }).replace(
      '"amount":0',
      '"amount":100.0,"extra":{"nested":[1,2.50]}',
    );
    const response = await notify(service, raw, { 'x-api-key': tenant.credentials.partner_api_key });
    expect(answerOf(response)).toEqual({ status: 200, body: { status: 'success' } });
    const requestId = response.headers['x-request-id'] as string;
    const { rows } = await service.context.database.executeSql(
      `select tenant_id, invoice_id, transaction_id, status, gateway, payload::text as payload, applied,
              status_before, status_after, request_id from payment_events where invoice_id = $1`,
      [invoice.id],
    );
    expect(rows).toEqual([
      {
        tenant_id: tenant.tenant.id,
        invoice_id: invoice.id,
        transaction_id: body.transaction_id,
        status: 'paid',
        gateway: 'tap',
        payload: expect.stringContaining('"amount": 100.0'),
        applied: true,
        status_before: 'pending',
        status_after: 'paid',
        request_id: requestId,
      },
    ]);
    expect(rows[0].payload).toContain('"nested": [1, 2.50]');
    const refused = await service.context.database.executeSql(
      'select count(*)::int as count from refused_notifications where request_id = $1 or invoice_id = $2',
      [requestId, invoice.id],
    );
    expect(refused.rows[0].count).toBe(0);
  });
});

describe('next_retry_at', () => {
  it('says when the next attempt comes while the invoice is pending, and null once an outcome is reported', async () => {
    const invoice = await createInvoice(service, tenant);
    const retryAt = new Date(Date.now() + 60_000);
    await service.context.database.executeSql(
      `insert into payment_deliveries (invoice_id, attempt, http_status, error, next_retry_at)
       values ($1, 1, 503, 'endpoint answered HTTP 503', $2)`,
      [invoice.id, retryAt.toISOString()],
    );
    const shown = async () =>
      expectOk<'getPaymentRequest'>(await live(tenant).api('GET', `/api/v1/payment-requests/${invoice.id}/`))
        .payment_request;
    expect((await shown()).next_retry_at).toBe(retryAt.toISOString());
    const paid = await notify(service, notificationFor(invoice), { 'x-api-key': tenant.credentials.partner_api_key });
    expect(answerOf(paid)).toEqual({ status: 200, body: { status: 'success' } });
    expect((await shown()).next_retry_at).toBeNull();
  });
});

describe('live figures', () => {
  it("leave test invoices' notifications and attempts out of the console's charts", async () => {
    const { hourlyPaymentActivity } = await import('../../../src/payments/index.js');
    const before = await hourlyPaymentActivity(service.context.db);
    const invoice = await createTestInvoice(tenant);
    await notify(service, notificationFor(invoice), { 'x-api-key': tenant.test.partnerKey });
    const after = await hourlyPaymentActivity(service.context.db);
    const total = (activity: typeof before) =>
      [...Object.values(activity.notifications.counts), ...Object.values(activity.attempts.counts)]
        .flat()
        .reduce((sum, count) => sum + count, 0);
    expect((await showInvoice(service, invoice.id)).invoice.status).toBe('paid');
    expect(total(after)).toBe(total(before));
  });
});

describe('an unknown status', () => {
  it('is stored, answered success, and flagged unknown_status in the admin API, the log and /metrics', async () => {
    const invoice = await createInvoice(service, tenant);
    const before = await scrape();
    for (const status of ['PAID', 'succeeded']) {
      const response = await notify(service, notificationFor(invoice, { status }), {
        'x-api-key': tenant.credentials.partner_api_key,
      });
      expect(answerOf(response)).toEqual({ status: 200, body: { status: 'success' } });
    }
    const after = await scrape();
    expect(
      after.value('payment_notifications_unknown_status_total', { mode: 'live' }) -
        before.value('payment_notifications_unknown_status_total', { mode: 'live' }),
    ).toBe(2);
    const shown = await showInvoice(service, invoice.id);
    expect(shown.invoice.status).toBe('pending');
    expect(shown.events.map((event) => [event.status, event.applied, event.not_applied_reason])).toEqual([
      ['PAID', false, 'unknown_status'],
      ['succeeded', false, 'unknown_status'],
    ]);
    const log = expectOk<'listPaymentNotifications'>(
      await live(tenant).api('GET', '/api/v1/payment-notifications/?outcome=accepted&limit=100'),
    );
    const notes = log.results
      .filter((entry) => entry.invoice_id === invoice.id)
      .map((entry) => [entry.not_applied_reason, entry.note]);
    expect(notes).toEqual([
      ['unknown_status', 'unknown status, not applied'],
      ['unknown_status', 'unknown status, not applied'],
    ]);
  });
});

describe('paging', () => {
  it('lists payment requests newest first with links that keep the filters', async () => {
    const fresh = await modalTenant();
    const made = [];
    for (let i = 0; i < 3; i++) made.push(await createTestInvoice(fresh));
    const first = expectOk<'listPaymentRequests'>(
      await test(fresh).api('GET', '/api/v1/payment-requests/?limit=2&status=pending'),
    );
    expect(first.count).toBe(3);
    expect(first.results.map((request) => request.invoice_id)).toEqual([made[2].id, made[1].id]);
    expect(first.next).toMatch(/\/api\/v1\/payment-requests\/\?status=pending&limit=2&offset=2$/);
    expect(first.results[0].attempts).toEqual([
      expect.objectContaining({
        attempt: 1,
        http_status: null,
        error: expect.stringContaining('no test payment endpoint'),
      }),
    ]);
    expectError(await test(fresh).api('GET', '/api/v1/payment-requests/?status=lost'), 400, 'VALIDATION_ERROR');
  });
});
