// Test mode end to end, as a partner with only test credentials: a test invoice sends a real
// signed payment request to the test endpoint (never the live one), the partner sees the attempt,
// reports outcomes with its test key, reads them back in its log, resends and pings.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastPing } from '../../../src/payments/index.js';
import { createInvoice, notificationFor, notify } from '../../payments/support.js';
import { useTenant } from '../../support/apps.js';
import { PartnerEndpoint, waitFor } from '../../support/partner-endpoint.js';
import { parsePrometheus } from '../../support/prometheus.js';
import { useService } from '../../support/service.js';
import { apiAs, expectError, expectOk } from './api.js';

describe('test mode with a real payment endpoint', () => {
  const service = useService({ env: { PAYMENT_RETRY_BASE_SECONDS: '0.5' } });
  const tenant = useTenant(service, { gateway: 'tap' });
  let testSso: string;
  let testKey: string;
  let liveUrl: string;
  let testUrl: string;
  const partner = new PartnerEndpoint();

  beforeAll(async () => {
    await partner.start();
    const secrets = [tenant.credentials.payment_endpoint_secret];
    liveUrl = partner.route('/live', secrets, [{ status: 200 }]);
    testUrl = partner.route('/test', secrets, [{ status: 200, body: { payment_url: 'https://sandbox.pay/s/1' } }]);
    await service.admin('PATCH', `/tenants/${tenant.tenant.id}`, {
      payment_endpoint_url: liveUrl,
      test_payment_endpoint_url: testUrl,
    });
    const issue = async (kind: string) =>
      (await service.admin('POST', `/tenants/${tenant.tenant.id}/credentials`, { kind })).json().secret as string;
    [testSso, testKey] = [await issue('test_sso_hmac_secret'), await issue('test_partner_api_key')];
  });
  afterAll(() => partner.stop());

  const api = () => apiAs(service, testSso);

  it('sends a signed payment request for a test invoice to the test endpoint only, and shows the attempt', async () => {
    const before = parsePrometheus((await service.apps.admin!.inject({ method: 'GET', url: '/metrics' })).body);
    const created = expectOk<'createTestInvoice'>(
      await api()('POST', '/api/v1/test/invoices/', { amount: '75.50', currency: 'SAR' }),
      201,
    );
    const invoiceId = created.payment_request.invoice_id;
    expect(created.payment_request).toMatchObject({ mode: 'test', amount: '75.50', status: 'pending' });

    const [received] = await waitFor('the payment request', () => {
      const requests = partner.received.get('/test') ?? [];
      return requests.length > 0 && requests;
    });
    expect(received.body).toMatchObject({
      type: 'payment.requested',
      invoice_id: invoiceId,
      amount: '75.50',
      livemode: false,
    });
    expect(received.verifiedWith).toEqual([true]);
    expect(partner.received.get('/live')).toEqual([]);

    const shown = await waitFor('the attempt on record', async () => {
      const data = expectOk<'getPaymentRequest'>(await api()('GET', `/api/v1/payment-requests/${invoiceId}/`));
      return data.payment_request.attempts.length === 1 && data.payment_request;
    });
    expect(shown.attempts[0]).toMatchObject({ attempt: 1, http_status: 200, error: null, next_retry_at: null });
    expect(shown.attempts[0].latency_ms).toEqual(expect.any(Number));
    expect(shown.payment_url).toBe('https://sandbox.pay/s/1');
    const after = parsePrometheus((await service.apps.admin!.inject({ method: 'GET', url: '/metrics' })).body);
    const added = (name: string, labels: Record<string, string>) =>
      after.value(name, labels) - before.value(name, labels);
    expect(added('payment_request_attempts_total', { outcome: 'delivered', mode: 'test' })).toBe(1);
    // Its duration and wait are test figures too: the live ones did not move.
    for (const [name, labels] of [
      ['payment_request_attempt_duration_seconds_count', { kind: 'success' }],
      ['payment_request_first_attempt_delay_seconds_count', {}],
    ] as const) {
      expect(added(name, { ...labels, mode: 'test' }), name).toBe(1);
      expect(added(name, { ...labels, mode: 'live' }), name).toBe(0);
    }

    // Resent: the same signed request comes again.
    expectOk(await api()('POST', `/api/v1/payment-requests/${invoiceId}/resend/`));
    await waitFor('the second request', () => (partner.received.get('/test')?.length ?? 0) >= 2);
    expect(partner.received.get('/test')![1].headers['webhook-id']).toBe(received.headers['webhook-id']);

    // A wrong amount, then the paid callback, with the test key: both in the log, newest first.
    const invoice = { id: invoiceId, amount: '75.50', currency: 'SAR' } as Parameters<typeof notificationFor>[0];
    const wrong = await notify(service, notificationFor(invoice, { amount: '75.00' }), { 'x-api-key': testKey });
    expect(wrong.json()).toEqual({ error: 'Amount mismatch' });
    const paid = await notify(service, notificationFor(invoice), { 'x-api-key': testKey });
    expect(paid.json()).toEqual({ status: 'success' });
    const log = await waitFor('both callbacks in the log', async () => {
      const data = expectOk<'listPaymentNotifications'>(await api()('GET', '/api/v1/payment-notifications/'));
      return data.count === 2 && data;
    });
    expect(log.results.map((entry) => [entry.outcome, entry.error, entry.invoice_id])).toEqual([
      ['accepted', null, invoiceId],
      ['refused', 'Amount mismatch', invoiceId],
    ]);
    expectError(await api()('POST', `/api/v1/payment-requests/${invoiceId}/resend/`), 409, 'CONFLICT');
    // The live secret sees none of it.
    const liveLog = expectOk<'listPaymentNotifications'>(
      await apiAs(service, tenant.credentials.sso_hmac_secret)('GET', '/api/v1/payment-notifications/'),
    );
    expect(liveLog.count).toBe(0);
  });

  it('pings the endpoint of the credential mode', async () => {
    const pinged = expectOk<'pingPaymentEndpoint'>(await api()('POST', '/api/v1/payment-endpoint/ping/'));
    expect(pinged.ping).toMatchObject({ ok: true, http_status: 200, endpoint_url: testUrl });
    const live = expectOk<'pingPaymentEndpoint'>(
      await apiAs(service, tenant.credentials.sso_hmac_secret)('POST', '/api/v1/payment-endpoint/ping/'),
    );
    expect(live.ping).toMatchObject({ ok: true, endpoint_url: liveUrl, mode: 'live' });
    expect(partner.received.get('/test')!.at(-1)!.body).toMatchObject({ type: 'ping', tenant_id: tenant.tenant.id });
    // Each mode's latest ping is its own, though the live one came after.
    const { db } = service.context;
    expect(await lastPing(db, tenant.tenant.id, 'test')).toMatchObject({ webhookId: pinged.ping.webhook_id });
    expect(await lastPing(db, tenant.tenant.id, 'live')).toMatchObject({ webhookId: live.ping.webhook_id });
    expect(pinged.ping.mode).toBe('test');
  });

  it('sends live invoices to the live endpoint only', async () => {
    const testCount = partner.received.get('/test')!.length;
    const invoice = await createInvoice(service, tenant);
    await waitFor('the live request', () =>
      partner.received.get('/live')!.some((entry) => entry.body.invoice_id === invoice.id),
    );
    expect(partner.received.get('/test')!.length).toBe(testCount);
  });
});
