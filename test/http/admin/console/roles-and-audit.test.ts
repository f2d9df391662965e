// The console in real Chromium for named operators: a read-only operator sees no control they
// cannot use and a refused change is a page with the console's navigation; an operator sees them;
// the audit page tells the changes in words, with links and values, at desktop and phone width.
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createInvoice, type InvoiceJson } from '../../../payments/support.js';
import { useTenant } from '../../../support/apps.js';
import { launchChromium, screenshotOnFailure } from '../../../support/browser.js';
import { useService } from '../../../support/service.js';

describe('console: roles and the audit trail', () => {
  const service = useService();
  const tenant = useTenant(service, { gateway: 'tap', name: 'Acme Travel' });
  let browser: Browser;
  let page: Page;
  let invoice: InvoiceJson;
  const tokens: Record<'reader' | 'operator', string> = { reader: '', operator: '' };
  const url = (path: string) => `${service.urls.admin}/console${path}`;

  async function signInAs(token: string) {
    await page.context().clearCookies();
    await page.goto(url('/sign-in'));
    await page.fill('input[name="token"]', token);
    await page.click('button:has-text("Sign in")');
    await page.locator('h1', { hasText: 'Overview' }).waitFor();
  }

  /** The controls (buttons, but for Sign out and filters) the page shows. */
  const actionButtons = () =>
    page.locator('form[method="post"] button').filter({ hasNotText: 'Sign out' }).allTextContents();

  beforeAll(async () => {
    invoice = await createInvoice(service, tenant);
    for (const [who, name, role] of [
      ['reader', 'Rita Reader', 'read-only'],
      ['operator', 'Omar Operator', 'operator'],
    ] as const) {
      const created = await service.admin('POST', '/operators', { name, role });
      tokens[who] = created.json().token;
    }
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    page.on('dialog', (dialog) => dialog.accept());
  });
  afterEach(async ({ task }) => {
    if (task.result?.state === 'fail') await screenshotOnFailure(page, `console roles ${task.name}`);
  });
  afterAll(() => browser?.close());

  it('shows a read-only operator everything but the controls they cannot use', async () => {
    await signInAs(tokens.reader);
    await page.goto(url(`/tenants/${tenant.tenant.id}`));
    await page.locator('h1', { hasText: 'Acme Travel' }).waitFor();
    // What there is to see is there: the tenant's details and its credentials.
    expect(await page.locator('h2', { hasText: 'Credentials' }).count()).toBe(1);
    expect(await page.locator('td.mono', { hasText: 'pis_sso_' }).count()).toBeGreaterThan(0);
    expect(await actionButtons()).toEqual([]);
    for (const path of ['/tenants', '/partner-keys', `/invoices/${invoice.id}`, '/prompts', '/operators', '/geo']) {
      await page.goto(url(path));
      expect(await actionButtons(), path).toEqual([]);
    }
    await page.goto(url('/tenants'));
    expect(await page.locator('summary', { hasText: 'Create a tenant' }).count()).toBe(0);
    await page.goto(url('/prompts'));
    expect(await page.locator('.prompt-list li').count()).toBeGreaterThan(0);
    // Every page names its icon, served by the console itself.
    const icon = await page.locator('link[rel="icon"]').getAttribute('href');
    const served = await fetch(`${service.urls.admin}${icon}`);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
  });

  it("answers a read-only operator's change with a 403 page that keeps the navigation", async () => {
    await signInAs(tokens.reader);
    await page.goto(url(`/tenants/${tenant.tenant.id}`));
    // The form the page no longer shows, submitted as the browser would.
    const [response] = await Promise.all([
      page.waitForResponse((answer) => answer.request().method() === 'POST'),
      page.evaluate((tenantId) => {
        const csrf = (document.querySelector('input[name="_csrf"]') as HTMLInputElement).value;
        const form = document.createElement('form');
        form.method = 'post';
        form.action = `/console/tenants/${tenantId}/activation`;
        for (const [name, value] of [
          ['_csrf', csrf],
          ['is_active', 'false'],
        ]) {
          const input = document.createElement('input');
          input.type = 'hidden';
          input.name = name;
          input.value = value;
          form.append(input);
        }
        document.body.append(form);
        form.submit();
      }, tenant.tenant.id),
    ]);
    expect(response.status()).toBe(403);
    await page.locator('h1', { hasText: 'Not allowed' }).waitFor();
    expect(await page.getByRole('alert').textContent()).toBe(
      'Your role (read-only) may not do this: it needs operator.',
    );
    expect(await page.locator('header nav a').allTextContents()).toEqual(
      expect.arrayContaining(['Home', 'Tenants', 'Invoices', 'Audit']),
    );
    expect(await page.locator('header nav').textContent()).toContain('Rita Reader (read-only)');
    expect((await service.admin('GET', `/tenants/${tenant.tenant.id}`)).json().tenant.is_active).toBe(true);
  });

  it('shows an operator the controls, and the audit trail tells what they did in words', async () => {
    // A refused sign-in first: it is on the trail too.
    await page.context().clearCookies();
    await page.goto(url('/sign-in'));
    await page.fill('input[name="token"]', 'not-anybody-s-token');
    await page.click('button:has-text("Sign in")');
    await page.getByRole('alert').waitFor();

    await signInAs(tokens.operator);
    await page.goto(url(`/tenants/${tenant.tenant.id}`));
    expect(await actionButtons()).toEqual(expect.arrayContaining(['Deactivate', 'Revoke', 'Issue another', 'Save']));
    await page.click('button:has-text("Deactivate")');
    await page.getByRole('status').filter({ hasText: 'deactivated' }).waitFor();
    await page.fill('input[name="name"]', 'Acme Travel Co');
    await page.click('button:has-text("Save")');
    await page.getByRole('status').filter({ hasText: 'saved' }).waitFor();
    // The same action through the API reads the same.
    expect((await service.admin('PATCH', `/tenants/${tenant.tenant.id}`, { is_active: true })).statusCode).toBe(200);
    // A ping from the tenant's page, to an endpoint where nothing listens: the page says so.
    const closed = 'http://127.0.0.1:9/payment-requests';
    await service.admin('PATCH', `/tenants/${tenant.tenant.id}`, { payment_endpoint_url: closed });
    await page.reload();
    expect(await page.locator('dd', { hasText: 'never pinged' }).count()).toBe(1);
    // The signing secret signs every message: unused while none was sent (the invoice had nowhere to go).
    const signingLastUsed = page
      .locator('section.card', { hasText: 'Payment endpoint signing secret' })
      .locator('tbody tr td')
      .nth(2);
    expect(await signingLastUsed.textContent()).toBe('never');
    await page.click('button:has-text("Ping now")');
    await page.getByRole('status').filter({ hasText: 'Ping not accepted: no answer' }).waitFor();
    expect(await page.locator('dd', { hasText: 'never pinged' }).count()).toBe(0);
    expect(await signingLastUsed.textContent()).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);

    await page.goto(url('/audit'));
    const entries = page.locator('li.audit-event');
    const entry = (text: string) => entries.filter({ hasText: text }).first();
    await entry('Deactivated tenant Acme Travel').waitFor();
    expect(await entry('Deactivated tenant Acme Travel').textContent()).toContain('Omar Operator');
    expect(await entry('Deactivated tenant Acme Travel').textContent()).toContain('console');
    expect(await entry('Deactivated tenant Acme Travel').locator('.changes').textContent()).toBe(
      'is_active: true → false',
    );
    // The rename is the older of the two changes (the endpoint for the ping came after).
    const renamed = entries.filter({ hasText: 'Changed tenant Acme Travel Co' }).last();
    expect(await renamed.locator('.changes').textContent()).toBe('name: Acme Travel → Acme Travel Co');
    const activated = entry('Activated tenant Acme Travel Co');
    expect(await activated.textContent()).toContain('admin token');
    expect(await activated.textContent()).toContain('API');
    expect(await activated.locator('a', { hasText: 'Acme Travel Co' }).getAttribute('href')).toBe(
      `/console/tenants/${tenant.tenant.id}`,
    );
    expect(await entry('Pinged the payment endpoint of tenant Acme Travel Co').textContent()).toContain('console');
    expect(await entry('Failed sign-in to the console with a wrong token').textContent()).toContain('127.0.0.1');
    expect(await page.locator('body').textContent()).not.toContain('/activation is_active');

    // At phone width nothing is clipped: the page is no wider than the screen.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.reload();
    const widths = await page.evaluate(() => ({
      page: document.documentElement.scrollWidth,
      screen: window.innerWidth,
    }));
    expect(widths.page).toBeLessThanOrEqual(widths.screen);
    await page.setViewportSize({ width: 1280, height: 900 });
  });
});
