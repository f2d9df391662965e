// The operators' console in real Chromium, against a real service and a partner endpoint on
// loopback: sign-in, tenants and their secrets, credentials, an invoice's timeline and resend,
// notifications with their payload, CSRF, Arabic prompts.
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createInvoice, createTrip, showInvoice } from '../../../payments/support.js';
import { launchChromium, screenshotOnFailure } from '../../../support/browser.js';
import { TEST_ADMIN_TOKEN } from '../../../support/env.js';
import { PartnerEndpoint, waitFor } from '../../../support/partner-endpoint.js';
import { type TestTenant, useService } from '../../../support/service.js';

describe('operators console', () => {
  const service = useService({ env: { PAYMENT_RETRY_BASE_SECONDS: '0.5' } });
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const partner = new PartnerEndpoint();
  const url = (path: string) => `${service.urls.admin}/console${path}`;

  async function signIn(target: Page) {
    await target.goto(url('/'));
    await target.fill('input[name="token"]', TEST_ADMIN_TOKEN);
    await target.click('button:has-text("Sign in")');
    await target.locator('h1', { hasText: 'Overview' }).waitFor();
  }

  /** Reloads until `locator` shows: the worker records attempts in the background. */
  async function reloadUntil(locator: Locator) {
    await waitFor('the page to show it', async () => {
      await page.reload();
      return (await locator.count()) > 0;
    });
  }

  beforeAll(async () => {
    await partner.start();
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('dialog', (dialog) => dialog.accept());
  });
  afterEach(async ({ task }) => {
    if (task.result?.state === 'fail') await screenshotOnFailure(page, `console ${task.name}`);
  });
  afterAll(async () => {
    await browser?.close();
    await partner.stop();
  });

  it('refuses a wrong admin token, signs in with the right one, and keeps the token out of the page', async () => {
    await page.goto(url('/'));
    expect(new URL(page.url()).pathname).toBe('/console/sign-in');
    await page.fill('input[name="token"]', 'not-the-admin-token-0123456789abcdef');
    await page.click('button:has-text("Sign in")');
    await page
      .getByRole('alert')
      .filter({ hasText: 'That is neither an operator token nor the admin token.' })
      .waitFor();

    await signIn(page);
    expect(page.url()).not.toContain(TEST_ADMIN_TOKEN);
    expect(await page.content()).not.toContain(TEST_ADMIN_TOKEN);
    const stored = await page.evaluate(
      () => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }),
    );
    expect(stored).toBe('{}{}');
    const [session] = (await context.cookies()).filter((cookie) => cookie.name === 'pi_console_session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/console' });
    expect(session.value).not.toContain(TEST_ADMIN_TOKEN);
    expect(session.expires * 1000 - Date.now()).toBeGreaterThan(11.9 * 3600_000);
    expect(session.expires * 1000 - Date.now()).toBeLessThanOrEqual(12 * 3600_000);
  });

  it('signs out: the old session cookie no longer opens a page', async () => {
    const other = await browser.newContext();
    const otherPage = await other.newPage();
    try {
      await signIn(otherPage);
      const cookies = await other.cookies();
      await otherPage.click('button:has-text("Sign out")');
      await otherPage.locator('h1', { hasText: 'Sign in' }).waitFor();
      await other.addCookies(cookies);
      await otherPage.goto(url('/tenants'));
      expect(new URL(otherPage.url()).pathname).toBe('/console/sign-in');
    } finally {
      await other.close();
    }
  });

  let created: { id: string; slug: string; sso: string };

  it('creates a tenant and shows its three secrets once, with a warning', async () => {
    const slug = `console-${Date.now().toString(36)}`;
    await page.goto(url('/tenants'));
    // Open when there is no tenant yet; a click on its summary would close it then.
    await page.locator('details', { hasText: 'Create a tenant' }).evaluate((details) => {
      (details as HTMLDetailsElement).open = true;
    });
    await page.fill('input[name="name"]', 'Console Travel <b>&</b>');
    await page.fill('input[name="slug"]', slug);
    await page.fill('input[name="payment_endpoint_url"]', 'https://pay.console.example/requests');
    await page.click('button:has-text("Create tenant")');
    await page.getByText('They are shown once and will not be shown again').waitFor();
    const secrets = await page
      .locator('input[data-secret]')
      .evaluateAll((inputs) => inputs.map((input) => (input as HTMLInputElement).value));
    expect(secrets).toHaveLength(3);
    expect(secrets[0]).toMatch(/^pis_sso_/);
    expect(secrets[1]).toMatch(/^pis_pay_/);
    expect(secrets[2]).toMatch(/^whsec_/);
    // The name is shown as text, never as markup.
    await page.getByRole('heading', { name: 'Tenant Console Travel <b>&</b> created' }).waitFor();

    await page.click('a:has-text("I have copied them")');
    const id = new URL(page.url()).pathname.split('/').pop()!;
    created = { id, slug, sso: secrets[0] };
    const content = await page.content();
    for (const secret of secrets) expect(content).not.toContain(secret);
    expect(await page.locator('section.card', { hasText: 'SSO HMAC secret' }).locator('tbody tr').count()).toBe(1);

    // A refused form comes back to its page with the reason.
    await page.goto(url('/tenants'));
    await page.locator('details', { hasText: 'Create a tenant' }).evaluate((details) => {
      (details as HTMLDetailsElement).open = true;
    });
    await page.fill('input[name="name"]', 'Same slug');
    await page.fill('input[name="slug"]', slug);
    await page.click('button:has-text("Create tenant")');
    await page
      .getByRole('status')
      .filter({ hasText: `A tenant with slug "${slug}" already exists.` })
      .waitFor();
    expect(new URL(page.url()).pathname).toBe('/console/tenants');
  });

  async function apiStatus(secret: string): Promise<number> {
    const response = await fetch(`${service.urls.integrations}/api/v1/countries/`, {
      headers: { authorization: `Api-Key ${secret}` },
    });
    return response.status;
  }

  it('issues another credential and revokes it; the revoked secret gets 401 on /api/v1/', async () => {
    await page.goto(url(`/tenants/${created.id}`));
    const sso = page.locator('section.card', { hasText: 'SSO HMAC secret' });
    await sso.locator('button:has-text("Issue another")').click();
    await page.getByText('will not be shown again').waitFor();
    const secret = await page.locator('input[data-secret]').inputValue();
    expect(secret).toMatch(/^pis_sso_/);
    expect(await apiStatus(secret)).toBe(200);

    await page.goto(url(`/tenants/${created.id}`));
    const hint = `pis_sso_…${secret.slice(-4)}`;
    const row = sso.locator('tbody tr', { hasText: hint });
    // Its use just now is recorded (in the background, so the page may need a reload).
    await reloadUntil(sso.locator('tbody tr', { hasText: hint }).locator('time'));
    await row.locator('button:has-text("Revoke")').click();
    await page
      .getByRole('status')
      .filter({ hasText: `${hint} revoked.` })
      .waitFor();
    expect(await row.textContent()).toContain('revoked');
    expect(await apiStatus(secret)).toBe(401);
    expect(await apiStatus(created.sso)).toBe(200);
  });

  it('refuses a state-changing request without its CSRF token, or from another origin', async () => {
    await page.goto(url(`/tenants/${created.id}`));
    const withoutToken = await page.evaluate(async (path) => {
      const response = await fetch(path, { method: 'POST', body: new URLSearchParams({ is_active: 'false' }) });
      return response.status;
    }, `/console/tenants/${created.id}/activation`);
    expect(withoutToken).toBe(403);

    const token = await page.locator('input[name="_csrf"]').first().inputValue();
    const cookie = (await context.cookies())
      .filter((item) => item.name === 'pi_console_session')
      .map((item) => `${item.name}=${item.value}`)
      .join('; ');
    const fromElsewhere = await fetch(url(`/tenants/${created.id}/activation`), {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, origin: 'https://attacker.example', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ is_active: 'false', _csrf: token }),
    });
    expect(fromElsewhere.status).toBe(403);
    expect((await service.admin('GET', `/tenants/${created.id}`)).json().tenant.is_active).toBe(true);

    // The same form with its token, from the page, works.
    await page.click('button:has-text("Deactivate")');
    await page.getByRole('status').filter({ hasText: 'deactivated' }).waitFor();
    expect((await service.admin('GET', `/tenants/${created.id}`)).json().tenant.is_active).toBe(false);
    await page.click('button:has-text("Activate")');
    await page.getByRole('status').filter({ hasText: 'activated' }).waitFor();
  });

  let paying: { tenant: TestTenant; invoiceId: string };

  it('shows a payment request that failed then succeeded as two attempts, each with what was sent; "send again" adds a third', async () => {
    const tenant = await service.createTenant({ gateway: 'tap' });
    const endpoint = partner.route(
      '/console',
      [tenant.credentials.payment_endpoint_secret],
      [
        { status: 503, body: 'upstream busy' },
        { status: 200, body: { payment_url: 'https://pay.example.com/console' } },
      ],
    );
    await service.admin('PATCH', `/tenants/${tenant.tenant.id}`, { payment_endpoint_url: endpoint });
    const trip = await createTrip(service, tenant);
    const invoice = await createInvoice(service, tenant, { amount: '100.10', trip_id: trip.id });
    paying = { tenant, invoiceId: invoice.id };

    await page.goto(url(`/invoices?tenant=${tenant.tenant.id}`));
    await page.click(`a[href="/console/invoices/${invoice.id}"]`);
    await reloadUntil(page.locator('.event.attempt', { hasText: 'attempt 2' }));
    const first = page.locator('.event.attempt', { hasText: 'attempt 1' });
    expect(await first.textContent()).toContain('503');
    expect(await first.textContent()).toContain('endpoint answered HTTP 503');
    expect(await first.locator('details.reply pre').textContent()).toBe('upstream busy');
    expect(await first.textContent()).toContain('Next retry');

    // Beside each reply, what that attempt sent: the URL, the headers and the body byte for byte.
    const [sentFirst] = partner.received.get('/console')!;
    await first.getByText('Request sent').click();
    const sent = first.locator('details.sent');
    expect(await sent.locator('pre').textContent()).toBe(sentFirst.raw);
    const shown = await sent.locator('dl').textContent();
    expect(shown).toContain(endpoint);
    expect(shown).toContain(`msg_${invoice.id}`);
    expect(sentFirst.headers['webhook-id']).toBe(`msg_${invoice.id}`);
    expect(shown).toContain(String(sentFirst.headers['webhook-timestamp']));
    expect(shown).not.toContain(String(sentFirst.headers['webhook-signature']));
    expect(await page.content()).not.toContain(tenant.credentials.payment_endpoint_secret);
    expect(await page.locator('.event.attempt', { hasText: 'attempt 2' }).textContent()).toContain('200');

    await page.click('button:has-text("Send the payment request again")');
    await page.getByRole('status').filter({ hasText: 'Attempt 3 of the payment request queued' }).waitFor();
    await reloadUntil(page.locator('.event.attempt', { hasText: 'attempt 3' }));
    const { deliveries } = await showInvoice(service, invoice.id);
    expect(deliveries).toHaveLength(3);
    expect(partner.received.get('/console')).toHaveLength(3);
    // The admin API's invoice view says the same of every attempt.
    expect(deliveries.map((delivery) => delivery.request)).toEqual(
      partner.received.get('/console')!.map((received) => ({
        url: endpoint,
        webhook_id: `msg_${invoice.id}`,
        webhook_timestamp: Number(received.headers['webhook-timestamp']),
        body: received.raw,
      })),
    );
  });

  it('shows a notification sent to the callback on the timeline, with its payload as sent', async () => {
    const body = `{"invoice_id":"${paying.invoiceId}","transaction_id":"txn_console_1","status":"paid","amount":100.10,"currency":"SAR","gateway":"tap","note":"<script>alert(1)</script>"}`;
    const response = await fetch(`${service.urls.integrations}/api/v1/payments/notify/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': paying.tenant.credentials.partner_api_key },
      body,
    });
    expect(await response.json()).toEqual({ status: 'success' });

    await page.goto(url(`/invoices/${paying.invoiceId}`));
    const notification = page.locator('.event.notification');
    expect(await notification.locator('h3').textContent()).toContain('paid');
    expect(await notification.textContent()).toContain('pending → paid');
    expect(await notification.textContent()).toContain('txn_console_1');
    const payload = await notification.locator('pre.payload').textContent();
    expect(payload).toContain('"amount": 100.10');
    expect(payload).toContain('"note": "<script>alert(1)</script>"');
    expect(await page.locator('.event.trip').textContent()).toContain('booked');
    expect(await page.locator('button:has-text("Send the payment request again")').count()).toBe(0);
  });

  it('charts the last day on the home page: attempts and notifications per hour by outcome', async () => {
    await page.goto(url('/'));
    const legend = async (chart: string) =>
      Object.fromEntries(
        (await page.locator('figure', { hasText: chart }).locator('.legend li').allTextContents()).map((item) => {
          const [label, count] = item.trim().split(/ (?=\d+$)/);
          return [label, Number(count)];
        }),
      );
    expect(await legend('Payment request attempts')).toEqual({ delivered: 2, retrying: 1, failed: 0 });
    expect(await legend('Payment notifications')).toEqual({ paid: 1, failed: 0, refunded: 0, 'not applied': 0 });
    const bars = page.locator('figure', { hasText: 'Payment request attempts' }).locator('rect');
    expect(await bars.count()).toBeGreaterThanOrEqual(1);
    expect(await page.locator('.stat', { hasText: 'tenants active' }).locator('.value').textContent()).toBe('2');
  });

  it('edits the Arabic default prompts right to left, in the order shown', async () => {
    await page.goto(url('/prompts?language=ar'));
    const list = page.locator('[data-prompt-list]');
    expect(await list.getAttribute('dir')).toBe('rtl');
    const first = list.locator('input').first();
    expect(await first.evaluate((input) => getComputedStyle(input).direction)).toBe('rtl');
    const before = await list
      .locator('input')
      .evaluateAll((inputs) => inputs.map((input) => (input as HTMLInputElement).value).filter(Boolean));
    expect(before[0]).toMatch(/[\u0600-\u06FF]/);

    await list.locator('li').nth(1).locator('button[data-move="up"]').click();
    await page.click('button:has-text("Save Arabic")');
    await page
      .getByRole('status')
      .filter({ hasText: `${before.length} Arabic (العربية) prompts saved.` })
      .waitFor();
    const saved = (await service.admin('GET', '/default-prompts/ar'))
      .json()
      .prompts.map((prompt: { text: string }) => prompt.text);
    expect(saved).toEqual([before[1], before[0], ...before.slice(2)]);
  });

  it('finds a city by its Arabic name, marks it supported and adds an attraction; creates a partner key', async () => {
    await page.goto(url('/geo'));
    await page.fill('input[name="q"]', 'الرياض');
    await page.click('button:has-text("Find")');
    const riyadh = page.locator('tbody tr', { hasText: 'Riyadh' }).first();
    await riyadh.locator('button:has-text("Mark supported")').click();
    await page.getByRole('status').filter({ hasText: 'Riyadh is now supported.' }).waitFor();
    await riyadh.locator('input[name="name"]').fill('Masmak Fortress');
    await riyadh.locator('button:has-text("Add")').click();
    await page.getByRole('status').filter({ hasText: 'Attraction "Masmak Fortress" added.' }).waitFor();

    await page.goto(url('/partner-keys'));
    await page.fill('input[name="name"]', 'Console backend');
    await page.uncheck('input[value="cities:read"]');
    await page.click('button:has-text("Create key")');
    const key = await page.locator('input[data-secret]').inputValue();
    const countries = await fetch(`${service.urls.backend}/v1/countries/`, {
      headers: { authorization: `Api-Key ${key}` },
    });
    expect(countries.status).toBe(200);
    const cities = await fetch(`${service.urls.backend}/v1/cities/`, { headers: { authorization: `Api-Key ${key}` } });
    expect(cities.status).toBe(403);
  });

  it('serves a first page under 300 KB, every asset from the service itself', async () => {
    const fresh = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const phone = await fresh.newPage();
    let bytes = 0;
    const origins = new Set<string>();
    phone.on('response', async (response) => {
      origins.add(new URL(response.url()).origin);
      bytes += (await response.body().catch(() => Buffer.alloc(0))).length;
    });
    try {
      await signIn(phone);
      expect(bytes).toBeLessThan(300_000);
      expect([...origins]).toEqual([service.urls.admin]);
      // Nothing wider than the phone's screen but the tables' own scrollers.
      expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    } finally {
      await fresh.close();
    }
  });
});
