// The console's view of the payment conversation in real Chromium: a tenant's callbacks log with
// its outcome filter, the invoice search by invoice and transaction id, refused callbacks with
// their reason and unknown statuses on the invoice timeline, test invoices marked, and possible
// double charges marked, filtered and counted.
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createInvoice, type InvoiceJson, keyOf, notificationFor, notify } from '../../../payments/support.js';
import { useTenant } from '../../../support/apps.js';
import { launchChromium, screenshotOnFailure } from '../../../support/browser.js';
import { TEST_ADMIN_TOKEN } from '../../../support/env.js';
import { waitFor } from '../../../support/partner-endpoint.js';
import { useService } from '../../../support/service.js';

describe('console: callbacks and search', () => {
  const service = useService();
  let browser: Browser;
  let page: Page;
  const tenant = useTenant(service, { gateway: 'tap' });
  let invoice: InvoiceJson;
  let testInvoiceId: string;
  const paidTransaction = `chg_console_${Date.now()}`;
  const url = (path: string) => `${service.urls.admin}/console${path}`;

  beforeAll(async () => {
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    invoice = await createInvoice(service, tenant);
    await notify(service, notificationFor(invoice, { amount: '1.00' }), keyOf(tenant));
    await notify(service, notificationFor(invoice, { status: 'PAID' }), keyOf(tenant));
    await notify(service, notificationFor(invoice, { transaction_id: paidTransaction }), keyOf(tenant));
    const testSso = (
      await service.admin('POST', `/tenants/${tenant.tenant.id}/credentials`, { kind: 'test_sso_hmac_secret' })
    ).json().secret;
    const created = await service.apps.integrations!.inject({
      method: 'POST',
      url: '/api/v1/test/invoices/',
      headers: { authorization: `Api-Key ${testSso}` },
      payload: { amount: '5.00', currency: 'SAR' },
    });
    testInvoiceId = created.json().data.payment_request.invoice_id;
    await waitFor('the refusal on record', async () => {
      const { rows } = await service.context.database.executeSql(
        'select count(*)::int as count from refused_notifications where invoice_id = $1',
        [invoice.id],
      );
      return rows[0].count === 1;
    });
    await page.goto(url('/'));
    await page.fill('input[name="token"]', TEST_ADMIN_TOKEN);
    await page.click('button:has-text("Sign in")');
    await page.locator('h1', { hasText: 'Overview' }).waitFor();
  });
  afterEach(async ({ task }) => {
    if (task.result?.state === 'fail') await screenshotOnFailure(page, `console callbacks ${task.name}`);
  });
  afterAll(() => browser?.close());

  it("lists the tenant's callbacks, accepted and refused, and filters them by outcome", async () => {
    await page.goto(url(`/tenants/${tenant.tenant.id}`));
    await page.click('a:has-text("Callbacks")');
    await page.locator('h1', { hasText: `Callbacks of ${tenant.tenant.name}` }).waitFor();
    const rows = page.locator('tr.callback');
    expect(await rows.count()).toBe(3);
    const refused = page.locator('tr.callback.refused');
    expect(await refused.locator('.reason').textContent()).toBe('Amount mismatch');
    expect(await refused.textContent()).toContain('HTTP 400');
    await page.locator('tr.callback.accepted', { hasText: 'unknown status, not applied' }).waitFor();

    await page.selectOption('select[name="outcome"]', 'refused');
    await page.waitForURL(/outcome=refused/);
    expect(await page.locator('tr.callback').count()).toBe(1);
    await page.selectOption('select[name="outcome"]', 'accepted');
    await page.waitForURL(/outcome=accepted/);
    expect(await page.locator('tr.callback.accepted').count()).toBe(2);
    expect(await page.locator('tr.callback.refused').count()).toBe(0);

    // From the log to the invoice's timeline: the refusal with its reason, the unknown status marked.
    await page.locator('tr.callback a.mono').first().click();
    await page.locator('li.event.refused', { hasText: 'Amount mismatch' }).waitFor();
    await page.locator('li.event.notification', { hasText: 'unknown status, not applied' }).waitFor();
  });

  it('marks a possible double charge on its invoice, filters the invoices by it and counts it on the home page', async () => {
    const payer = await service.createTenant({ gateway: 'tap' });
    const [twice, once] = [await createInvoice(service, payer), await createInvoice(service, payer)];
    for (const transaction of ['chg_first', 'chg_second']) {
      expect(
        (await notify(service, notificationFor(twice, { transaction_id: transaction }), keyOf(payer))).json(),
      ).toEqual({
        status: 'success',
      });
    }
    await notify(service, notificationFor(once), keyOf(payer));
    // Refused before the invoice check, it still shows on the invoice it names.
    await notify(service, { ...notificationFor(twice), transaction_id: undefined }, keyOf(payer));
    await waitFor('the refusal on the invoice', async () => {
      const { rows } = await service.context.database.executeSql(
        'select count(*)::int as count from refused_notifications where invoice_id = $1',
        [twice.id],
      );
      return rows[0].count === 1;
    });

    await page.goto(url(`/invoices/${twice.id}`));
    await page.locator('.toolbar .badge.bad', { hasText: 'possible double charge' }).waitFor();
    await page
      .locator('li.event.notification', { hasText: 'chg_second' })
      .getByText(/possible double charge/)
      .waitFor();
    await page.locator('li.event.refused', { hasText: 'Missing transaction_id' }).waitFor();
    await page.goto(url(`/invoices/${once.id}`));
    await page.locator('.toolbar').waitFor();
    expect(await page.locator('.toolbar .badge', { hasText: 'possible double charge' }).count()).toBe(0);

    await page.goto(url(`/invoices?tenant=${payer.tenant.id}`));
    expect(await page.locator('tbody tr').count()).toBe(2);
    await page.selectOption('select[name="flag"]', 'possible_double_charge');
    await page.waitForURL(/flag=possible_double_charge/);
    const flagged = page.locator('tbody tr');
    expect(await flagged.count()).toBe(1);
    expect(await flagged.textContent()).toContain(twice.id.slice(0, 8));

    await page.goto(url('/'));
    const count = page.locator('.stat', { hasText: 'possible double charges' });
    expect(await count.locator('.value').textContent()).toBe('1');
    await count.click();
    await page.waitForURL(/flag=possible_double_charge/);
    expect(await page.locator('tbody tr').count()).toBe(1);
  });

  it('finds an invoice by its id and by a transaction id, and marks test invoices', async () => {
    await page.goto(url('/invoices'));
    await page.fill('input[name="q"]', paidTransaction);
    await page.click('button:has-text("Find")');
    await page.locator('h1', { hasText: 'Find an invoice' }).waitFor();
    const found = page.locator('tbody tr');
    expect(await found.count()).toBe(1);
    expect(await found.textContent()).toContain(invoice.id.slice(0, 8));

    await page.fill('input[name="q"]', testInvoiceId.toUpperCase());
    await page.click('button:has-text("Find")');
    await page.waitForURL(/q=/);
    expect(await page.locator('tbody tr').count()).toBe(1);
    await page.locator('tbody tr .badge.test').waitFor();

    await page.fill('input[name="q"]', 'chg_nobody_sent_this');
    await page.click('button:has-text("Find")');
    await page.getByText('No invoice has the id or a transaction "chg_nobody_sent_this".').waitFor();
  });

  it('charts live invoices on the home page, and test ones apart on its Test mode tab', async () => {
    const paidCount = async () =>
      Number(
        (
          await page
            .locator('figure', { hasText: 'Payment notifications' })
            .locator('.legend li', { hasText: 'paid' })
            .first()
            .textContent()
        )?.match(/\d+$/)?.[0],
      );
    await page.goto(url('/'));
    await page.locator('figure', { hasText: 'live invoices' }).first().waitFor();
    const livePaid = await paidCount();
    const testKey = (
      await service.admin('POST', `/tenants/${tenant.tenant.id}/credentials`, { kind: 'test_partner_api_key' })
    ).json().secret;
    const testInvoice = { id: testInvoiceId, amount: '5.00', currency: 'SAR' } as InvoiceJson;
    expect((await notify(service, notificationFor(testInvoice), { 'x-api-key': testKey })).json()).toEqual({
      status: 'success',
    });

    await page.reload();
    expect(await paidCount()).toBe(livePaid);
    await page.click('nav.tabs a:has-text("Test mode")');
    await page.locator('figure', { hasText: 'test invoices' }).first().waitFor();
    expect(await paidCount()).toBe(1);
    await page.locator('tbody tr .badge.test').first().waitFor();
  });
});
