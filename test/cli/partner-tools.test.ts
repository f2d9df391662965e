// The partner's tools: `partnerctl receive` verifies real payment requests (and refuses a
// tampered one, and fails on demand so retries show), `partnerctl simulate notify` posts the
// callback a partner's backend would (success, then duplicate).
import type { ChildProcess } from 'node:child_process';
import { Webhook } from 'standardwebhooks';
import { afterAll, describe, expect, it } from 'vitest';
import { createInvoice, showInvoice } from '../payments/support.js';
import { useTenant } from '../support/apps.js';
import { TEST_ADMIN_TOKEN } from '../support/env.js';
import { waitFor } from '../support/partner-endpoint.js';
import { partnerctl, runPartnerctl } from '../support/process.js';
import { receiving } from '../support/receive.js';
import { useService } from '../support/service.js';

/** A running `partnerctl receive --json`. */
const startReceive = (args: string[]) => receiving(runPartnerctl(['receive', '--port', '0', '--json', ...args], {}));

describe('partner tools', () => {
  const service = useService({ env: { PAYMENT_RETRY_BASE_SECONDS: '0.5' } });
  const tenant = useTenant(service);
  let receiver: ChildProcess | undefined;

  afterAll(() => receiver?.kill());

  it('receive verifies a real payment request after failing it once on demand, and refuses a tampered one', async () => {
    const receive = await startReceive([
      '--secret',
      tenant.credentials.payment_endpoint_secret,
      '--fail',
      '503',
      '--payment-url',
      'https://pay.example.com/{invoice_id}',
    ]);
    receiver = receive.child;
    await service.admin('PATCH', `/tenants/${tenant.tenant.id}`, { payment_endpoint_url: receive.url });
    const invoice = await createInvoice(service, tenant);

    const delivered = await waitFor('two deliveries', async () => {
      const shown = await showInvoice(service, invoice.id);
      return shown.invoice.payment_url ? shown : undefined;
    });
    expect(delivered.deliveries.map((delivery) => delivery.http_status)).toEqual([503, 200]);
    expect(delivered.invoice.payment_url).toBe(`https://pay.example.com/${invoice.id}`);
    const requests = await waitFor('both requests printed', async () => {
      const printed = receive.lines.filter((line) => line.body?.type === 'payment.requested');
      return printed.length === 2 ? printed : undefined;
    });
    expect(requests.map((line) => [line.verified, line.answered])).toEqual([
      [true, 503],
      [true, 200],
    ]);
    expect(requests[0].webhook_id).toBe(`msg_${invoice.id}`);

    // A correctly signed copy goes through (its webhook-id has had its failure); the same headers
    // on a body changed on the way do not.
    const body = JSON.stringify(requests[1].body);
    const webhookId = requests[1].webhook_id!;
    const now = new Date();
    const headers = {
      'content-type': 'application/json',
      'webhook-id': webhookId,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': new Webhook(tenant.credentials.payment_endpoint_secret).sign(webhookId, now, body),
    };
    expect((await fetch(receive.url, { method: 'POST', headers, body })).status).toBe(200);
    const tampered = body.replace('"100.00"', '"1.00"');
    expect((await fetch(receive.url, { method: 'POST', headers, body: tampered })).status).toBe(401);
    const refused = await waitFor('the refusal printed', async () =>
      receive.lines.find((line) => line.verified === false),
    );
    expect(refused).toMatchObject({ answered: 401, body: { amount: '1.00' } });
  });

  it('simulate notify answers success, then duplicate for the same transaction', async () => {
    const invoice = await createInvoice(service, tenant, { amount: '250.50' });
    const common = [
      '--invoice',
      invoice.id,
      '--status',
      'paid',
      '--transaction-id',
      'txn_sim_1',
      '--api-key',
      tenant.credentials.partner_api_key,
      '--url',
      service.urls.integrations!,
      '--json',
    ];
    // An operator: the invoice's fields come from the admin API.
    const first = await partnerctl(['simulate', 'notify', ...common], {
      ADMIN_URL: service.urls.admin!,
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    });
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({
      request: { body: { amount: '250.50', currency: 'SAR', gateway: 'tap', transaction_id: 'txn_sim_1' } },
      response: { status: 200, body: { status: 'success' } },
    });
    // A partner: no admin access, the fields as flags.
    const again = await partnerctl(
      ['simulate', 'notify', ...common, '--amount', '250.5', '--currency', 'SAR', '--gateway', 'tap'],
      {},
    );
    expect(JSON.parse(again.stdout).response).toEqual({ status: 200, body: { status: 'duplicate' } });
    expect((await showInvoice(service, invoice.id)).invoice.status).toBe('paid');

    const wrongKey = await partnerctl(
      [
        'simulate',
        'notify',
        ...common.slice(0, -5),
        '--api-key',
        'nope',
        '--amount',
        '1',
        '--currency',
        'SAR',
        '--gateway',
        'tap',
        '--url',
        service.urls.integrations!,
      ],
      {},
    );
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stdout).toContain('HTTP 401');
  });
});
