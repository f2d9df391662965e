// The partner portal in real Chromium, against a real service and a partner endpoint on loopback:
// every page in English and Arabic, at desktop and phone width, checked by axe-core (no serious or
// critical violation) and for nothing wider than the screen; the support question "why was our
// callback refused" answered from the page the link lands on; resend, ping, and a test invoice
// watched as it arrives.
import { AxeBuilder } from '@axe-core/playwright';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PortalLanguage } from '../../../src/tenants/index.js';
import { createInvoice, type InvoiceJson, keyOf, notificationFor, notify } from '../../payments/support.js';
import { launchChromium, screenshotOnFailure } from '../../support/browser.js';
import { PartnerEndpoint, waitFor } from '../../support/partner-endpoint.js';
import { type TestTenant, useService } from '../../support/service.js';

const VIEWPORTS = {
  desktop: { width: 1280, height: 900 },
  phone: { width: 390, height: 844 },
};
const HEADINGS: Record<PortalLanguage, Record<string, string>> = {
  en: {
    '/': 'Overview',
    '/payment-requests': 'Payment requests',
    '/callbacks': 'Callbacks',
    '/endpoint': 'Your payment endpoint',
    '/test-invoice': 'Create a test invoice',
  },
  ar: {
    '/': 'نظرة عامة',
    '/payment-requests': 'طلبات الدفع',
    '/callbacks': 'إشعارات الدفع',
    '/endpoint': 'نقطة استقبال طلبات الدفع',
    '/test-invoice': 'إنشاء فاتورة تجريبية',
  },
};

describe('partner portal in a browser', () => {
  const service = useService({ env: { PAYMENT_RETRY_BASE_SECONDS: '0.5' } });
  const partner = new PartnerEndpoint();
  let browser: Browser;
  let tenant: TestTenant;
  let testSecret: string;
  let invoice: InvoiceJson;
  let page: Page | undefined;
  const contexts: BrowserContext[] = [];

  async function link(secret: string, body: object): Promise<string> {
    const response = await fetch(`${service.urls.integrations}/api/v1/portal-sessions/`, {
      method: 'POST',
      headers: { authorization: `Api-Key ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(201);
    return ((await response.json()) as { data: { portal_session: { url: string } } }).data.portal_session.url;
  }

  /** A fresh browser at `viewport`, in `language`'s locale, signed in with a new link. */
  async function openPortal(
    secret: string,
    body: { access?: string; language?: PortalLanguage },
    viewport = VIEWPORTS.desktop,
    locale = 'en-GB',
  ): Promise<Page> {
    const context = await browser.newContext({ viewport, locale });
    contexts.push(context);
    page = await context.newPage();
    await page.goto(await link(secret, body));
    expect(new URL(page.url()).pathname).toBe('/');
    return page;
  }

  async function expectAccessible(target: Page, what: string) {
    const results = await new AxeBuilder({ page: target }).analyze();
    const grave = results.violations
      .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
      .map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`);
    expect(grave, what).toEqual([]);
    const overflow = await target.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow, `${what}: wider than the screen`).toBeLessThanOrEqual(0);
  }

  beforeAll(async () => {
    await partner.start();
    browser = await launchChromium();
    tenant = await service.createTenant({ gateway: 'tap' });
    const secret = tenant.credentials.payment_endpoint_secret;
    await service.admin('PATCH', `/tenants/${tenant.tenant.id}`, {
      payment_endpoint_url: partner.route(
        '/live',
        [secret],
        [
          { status: 503, body: 'upstream busy' },
          { status: 200, body: { payment_url: 'https://pay.portal.example/session/1' } },
        ],
      ),
      test_payment_endpoint_url: partner.route('/test', [secret], [{ status: 200, body: {} }]),
    });
    testSecret = (
      await service.admin('POST', `/tenants/${tenant.tenant.id}/credentials`, { kind: 'test_sso_hmac_secret' })
    ).json().secret;
    invoice = await createInvoice(service, tenant, { amount: '1250.50' });
    await waitFor('the payment request delivered', () => (partner.received.get('/live')?.length ?? 0) >= 2, 30_000);
    await notify(service, notificationFor(invoice, { amount: '1250.00' }), keyOf(tenant));
    await notify(service, notificationFor(invoice, { transaction_id: 'chg_portal_1' }), keyOf(tenant));
    await waitFor('the refusal on record', async () => {
      const { rows } = await service.context.database.executeSql(
        'select count(*)::int as count from refused_notifications where invoice_id = $1',
        [invoice.id],
      );
      return rows[0].count === 1;
    });
  });
  afterEach(async ({ task }) => {
    if (task.result?.state === 'fail') await screenshotOnFailure(page, `portal ${task.name}`);
    await Promise.all(contexts.splice(0).map((context) => context.close()));
  });
  afterAll(async () => {
    await browser?.close();
    await partner.stop();
  });

  for (const language of ['en', 'ar'] as const) {
    for (const [width, viewport] of Object.entries(VIEWPORTS)) {
      it(`shows every page in ${language} at ${width} width, accessible and within the screen`, {
        timeout: 120_000,
      }, async () => {
        const live = await openPortal(tenant.credentials.sso_hmac_secret, { language }, viewport);
        expect(await live.getAttribute('html', 'lang')).toBe(language);
        expect(await live.getAttribute('html', 'dir')).toBe(language === 'ar' ? 'rtl' : 'ltr');
        for (const path of [
          '/',
          '/payment-requests',
          `/payment-requests/${invoice.id}`,
          '/callbacks?outcome=refused',
          '/endpoint',
        ]) {
          await live.goto(new URL(path, live.url()).href);
          const heading = HEADINGS[language][path.split('?')[0]];
          if (heading) await live.getByRole('heading', { level: 1, name: heading }).waitFor();
          await expectAccessible(live, `${language} ${width} ${path}`);
        }
        const test = await openPortal(testSecret, { language, access: 'write' }, viewport);
        for (const path of ['/', '/test-invoice', '/endpoint']) {
          await test.goto(new URL(path, test.url()).href);
          await test.getByRole('heading', { level: 1, name: HEADINGS[language][path] }).waitFor();
          await expectAccessible(test, `${language} ${width} test ${path}`);
        }
      });
    }
  }

  it("answers 'why was our callback refused' on the page the link opens, with the payload one click away", async () => {
    const target = await openPortal(tenant.credentials.sso_hmac_secret, {});
    const refused = target.locator('section', { hasText: 'Callbacks refused lately' }).locator('tbody tr').first();
    await refused.getByText('Amount mismatch').waitFor();
    await refused.getByText('Show what you sent').click();
    await refused.getByText('"amount": "1250.00"').waitFor();
    // And the invoice it was about, one more click: every attempt, what we sent, both callbacks.
    await refused.getByRole('link', { name: invoice.id.slice(0, 8) }).click();
    await target.getByRole('heading', { level: 1, name: `Payment request ${invoice.id.slice(0, 8)}` }).waitFor();
    await target.getByText('Your endpoint answered HTTP 503').waitFor();
    await target.getByText('Your endpoint answered HTTP 200').waitFor();
    // What the last attempt sent, as recorded: its headers and the body exactly as signed.
    const sent = target.locator('section', { hasText: 'What we sent' });
    await sent.getByText(`msg_${invoice.id}`).waitFor();
    const delivered = partner.received.get('/live')!.filter((received) => received.body.invoice_id === invoice.id);
    expect(await sent.locator('pre').textContent()).toBe(delivered.at(-1)!.raw);
    await target.getByRole('table').getByText('chg_portal_1', { exact: true }).waitFor();
  });

  it('picks Arabic from the browser when the link names no language', async () => {
    const target = await openPortal(tenant.credentials.sso_hmac_secret, {}, VIEWPORTS.desktop, 'ar-SA');
    expect(await target.getAttribute('html', 'dir')).toBe('rtl');
    await target.getByRole('heading', { level: 1, name: 'نظرة عامة' }).waitFor();
  });

  it('resends a payment request and pings the endpoint with write access; offers neither read-only', {
    timeout: 60_000,
  }, async () => {
    const reader = await openPortal(tenant.credentials.sso_hmac_secret, {});
    const pending = await createInvoice(service, tenant, { amount: '75.00' });
    await reader.goto(new URL(`/payment-requests/${pending.id}`, reader.url()).href);
    expect(await reader.getByRole('button', { name: 'Send it again now' }).count()).toBe(0);
    await reader.goto(new URL('/endpoint', reader.url()).href);
    expect(await reader.getByRole('button', { name: 'Ping the endpoint' }).count()).toBe(0);

    const sentFor = () => partner.received.get('/live')!.filter((received) => received.body.invoice_id === pending.id);
    await waitFor('the first attempt', () => sentFor().length === 1);
    const writer = await openPortal(tenant.credentials.sso_hmac_secret, { access: 'write' });
    await writer.goto(new URL(`/payment-requests/${pending.id}`, writer.url()).href);
    await writer.getByRole('button', { name: 'Send it again now' }).click();
    await writer.getByRole('status').filter({ hasText: 'Sent again' }).waitFor();
    await waitFor('the resent request', () => sentFor().length === 2);
    await writer.goto(new URL('/endpoint', writer.url()).href);
    await writer.getByRole('button', { name: 'Ping the endpoint' }).click();
    await writer.getByRole('status').filter({ hasText: 'Ping sent.' }).waitFor();
    await writer.getByText('answered HTTP 200').waitFor();
  });

  it('creates a test invoice and shows its payment request arriving at the test endpoint', async () => {
    const target = await openPortal(testSecret, { access: 'write', language: 'ar' });
    await target.goto(new URL('/test-invoice', target.url()).href);
    await target.getByLabel('المبلغ').fill('42.50');
    await target.getByRole('button', { name: 'أنشئ وأرسل' }).click();
    await target.getByRole('status').filter({ hasText: 'أُنشئت الفاتورة التجريبية' }).waitFor();
    // The page refreshes itself until the first attempt is recorded.
    await target.getByText('تم التسليم').first().waitFor({ timeout: 30_000 });
    const id = new URL(target.url()).pathname.split('/').pop()!;
    expect(partner.received.get('/test')!.some((received) => received.body.invoice_id === id)).toBe(true);
  });
});
