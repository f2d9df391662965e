// `npm run screenshots`: the console's, the partner portal's and the Arabic guide's pictures in
// docs/, made from a real service with demo data on a fresh embedded database, in Debian's Chromium
// (CHROMIUM_PATH to use another). The demo's history is spread over the last day by moving its timestamps, so the home
// page's charts show a day's shape; everything else is made through the admin API, the callback
// and the portal links, as in use.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import type { Browser } from 'playwright-core';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { projectRoot } from '../src/paths.js';
import { startService } from '../src/server.js';
import { launchChromium } from '../test/support/browser.js';
import { PartnerEndpoint, waitFor } from '../test/support/partner-endpoint.js';

const ADMIN_TOKEN = 'screenshots-admin-token-0123456789abcdef';
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'console-screenshots-'));
const service = await startService(
  loadConfig({
    DATA_DIR: dataDir,
    ADMIN_TOKEN,
    HOST: '127.0.0.1',
    INTEGRATIONS_PORT: '0',
    BACKEND_PORT: '0',
    ADMIN_PORT: '0',
    PORTAL_PORT: '0',
    ALLOW_PRIVATE_PAYMENT_ENDPOINTS: 'true',
    PAYMENT_RETRY_BASE_SECONDS: '0.5',
    LOG_LEVEL: 'silent',
  }),
  createLogger('silent'),
);
const partner = new PartnerEndpoint();
await partner.start();

async function admin(method: 'GET' | 'POST' | 'PATCH', url: string, body?: unknown, token = ADMIN_TOKEN) {
  const response = await service.apps.admin!.inject({
    method,
    url: `/admin/v1${url}`,
    headers: { authorization: `Bearer ${token}` },
    ...(body !== undefined && { payload: body as object }),
  });
  if (response.statusCode >= 300) throw new Error(`${method} ${url}: ${response.statusCode} ${response.body}`);
  return response.json();
}

async function portalLink(secret: string, body: object): Promise<string> {
  const response = await fetch(`${service.urls.integrations}/api/v1/portal-sessions/`, {
    method: 'POST',
    headers: { authorization: `Api-Key ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.status !== 201) throw new Error(`portal link: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { data: { portal_session: { url: string } } }).data.portal_session.url;
}

/** The widths the portal's and the guide's pictures are taken at. */
const WIDTHS = { desktop: { width: 1280, height: 900 }, phone: { width: 390, height: 1100 } };

/**
 * The portal's pages, live and test mode, in both languages at desktop and phone width:
 * docs/portal-<page>-<language>-<width>.png.
 */
async function portalScreenshots(
  browser: Browser,
  tenant: { tenant: { id: string }; credentials: Record<string, string> },
  invoiceId: string,
) {
  const testSecret = (await admin('POST', `/tenants/${tenant.tenant.id}/credentials`, { kind: 'test_sso_hmac_secret' }))
    .secret;
  await admin('PATCH', `/tenants/${tenant.tenant.id}`, {
    test_payment_endpoint_url: partner.route(
      '/acme-test',
      [tenant.credentials.payment_endpoint_secret],
      [{ status: 200 }],
    ),
  });
  const pages: [string, string, 'live' | 'test'][] = [
    ['overview', '/', 'live'],
    ['requests', '/payment-requests', 'live'],
    ['request', `/payment-requests/${invoiceId}`, 'live'],
    ['callbacks', '/callbacks?outcome=refused', 'live'],
    ['endpoint', '/endpoint', 'live'],
    ['test-invoice', '/test-invoice', 'test'],
  ];
  for (const language of ['en', 'ar']) {
    for (const [width, viewport] of Object.entries(WIDTHS)) {
      const context = await browser.newContext({ viewport });
      const page = await context.newPage();
      for (const mode of ['live', 'test'] as const) {
        const secret = mode === 'live' ? tenant.credentials.sso_hmac_secret : testSecret;
        await page.goto(await portalLink(secret, { access: 'write', language }));
        for (const [name, url] of pages.filter((entry) => entry[2] === mode)) {
          await page.goto(new URL(url, page.url()).href);
          const file = `portal-${name}-${language}-${width}.png`;
          await page.screenshot({ path: path.join(projectRoot, 'docs', file) });
          console.log(`docs/${file}`);
        }
      }
      await context.close();
    }
  }
}

/** The partner guide in Arabic (`/docs/ar/` on the integrations host), right to left: docs/guide-ar-<width>.png. */
async function arabicGuideScreenshots(browser: Browser) {
  for (const [width, viewport] of Object.entries(WIDTHS)) {
    const context = await browser.newContext({ viewport });
    const page = await context.newPage();
    await page.goto(`${service.urls.integrations}/docs/ar/`);
    const file = `guide-ar-${width}.png`;
    await page.screenshot({ path: path.join(projectRoot, 'docs', file) });
    console.log(`docs/${file}`);
    await context.close();
  }
}

async function notify(tenantKey: string, body: Record<string, unknown>) {
  await fetch(`${service.urls.integrations}/api/v1/payments/notify/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': tenantKey },
    body: JSON.stringify(body),
  });
}

try {
  const tenants: { tenant: { id: string; gateway: string }; credentials: Record<string, string> }[] = [];
  for (const [name, slug, gateway] of [
    ['Acme Travel', 'acme', 'tap'],
    ['Oasis Journeys', 'oasis', 'hyperpay'],
    ['Red Sea Trips', 'red-sea', 'tap'],
  ]) {
    const created = await admin('POST', '/tenants', { name, slug, gateway });
    // Now and then busy: a 503 the next attempt gets past.
    const replies = Array.from({ length: 30 }, (_, i) =>
      i % 3 === 0
        ? { status: 503, body: 'upstream busy, try again' }
        : { status: 200, body: { payment_url: `https://pay.${slug}.example/session/${i}` } },
    );
    const endpoint = partner.route(`/${slug}`, [created.credentials.payment_endpoint_secret], replies);
    await admin('PATCH', `/tenants/${created.tenant.id}`, { payment_endpoint_url: endpoint });
    tenants.push(created);
  }
  await admin('PATCH', `/tenants/${tenants[2].tenant.id}`, { is_active: false });
  const invoices: { invoice: { id: string; amount: string }; tenant: (typeof tenants)[number] }[] = [];
  for (let i = 0; i < 14; i++) {
    const tenant = tenants[i % 2];
    const trip = (await admin('POST', '/trips', { tenant_id: tenant.tenant.id, title: `Riyadh weekend ${i + 1}` }))
      .trip;
    const { invoice } = await admin('POST', '/invoices', {
      tenant_id: tenant.tenant.id,
      amount: `${120 + i * 35}.50`,
      currency: 'SAR',
      trip_id: trip.id,
    });
    invoices.push({ invoice, tenant });
  }
  await waitFor(
    'the payment requests',
    async () => {
      const shown = await Promise.all(invoices.map(({ invoice }) => admin('GET', `/invoices/${invoice.id}`)));
      return shown.every((item) =>
        item.deliveries.some((delivery: { error: string | null }) => delivery.error === null),
      );
    },
    60_000,
  );
  for (const [i, { invoice, tenant }] of invoices.entries()) {
    if (i % 5 === 4) continue;
    const status = i % 7 === 3 ? 'failed' : 'paid';
    const payload = {
      invoice_id: invoice.id,
      transaction_id: `txn_${1000 + i}`,
      status,
      amount: invoice.amount,
      currency: 'SAR',
      gateway: tenant.tenant.gateway,
    };
    await notify(tenant.credentials.partner_api_key, payload);
    // A partner's bug, now and then: the amount without its decimals.
    if (i % 6 === 2)
      await notify(tenant.credentials.partner_api_key, { ...payload, amount: payload.amount.split('.')[0] });
    if (i % 4 === 1) await notify(tenant.credentials.partner_api_key, { ...payload, status: 'pending' });
  }
  // The picture of a timeline: a request that failed once, then got through, then was paid.
  const shown = await Promise.all(invoices.map(({ invoice }) => admin('GET', `/invoices/${invoice.id}`)));
  const pictured = shown.find((item) => item.deliveries.length === 2 && item.events.length > 0) ?? shown[0];
  // Spread the demo over the last day: each invoice and everything that happened to it moves back
  // by the same interval, invoices last as the shift is read from them. The pictured one stays
  // now, as what its attempts sent (their webhook-timestamp, the body's created_at) says.
  const shift =
    sql.raw(`(select id, (row_number() over (order by id = '${pictured.invoice.id}' desc, created_at desc) - 1)
    * interval '97 minutes' as back from invoices) as shifted`);
  await service.context.db.execute(
    sql`update payment_deliveries set attempted_at = attempted_at - shifted.back, next_retry_at = next_retry_at - shifted.back
          from ${shift} where shifted.id = payment_deliveries.invoice_id`,
  );
  await service.context.db.execute(
    sql`update payment_events set received_at = received_at - shifted.back from ${shift} where shifted.id = payment_events.invoice_id`,
  );
  await service.context.db.execute(
    sql`update refused_notifications set received_at = received_at - shifted.back from ${shift}
          where shifted.id = refused_notifications.invoice_id`,
  );
  await service.context.db.execute(
    sql`update invoices set created_at = invoices.created_at - shifted.back, updated_at = invoices.updated_at - shifted.back
          from ${shift} where shifted.id = invoices.id`,
  );
  // Two named operators at work, for the audit page: the changes name each of them.
  const amina = await admin('POST', '/operators', { name: 'Amina Haddad', role: 'admin' });
  const yusuf = await admin('POST', '/operators', { name: 'Yusuf Karim', role: 'operator' });
  const lena = await admin('POST', '/operators', { name: 'Lena Auditor', role: 'read-only' }, amina.token);
  await admin('PATCH', `/tenants/${tenants[1].tenant.id}`, { name: 'Oasis Journeys KSA' }, amina.token);
  await admin('POST', `/tenants/${tenants[0].tenant.id}/credentials`, { kind: 'partner_api_key' }, yusuf.token);
  await admin('POST', '/partner-keys', { name: 'BI dashboard', scopes: ['countries:read'] }, yusuf.token);
  await admin('PATCH', `/tenants/${tenants[2].tenant.id}`, { is_active: true }, yusuf.token);
  await admin('POST', `/tenants/${tenants[0].tenant.id}/payment-endpoint/ping`, undefined, yusuf.token);

  const browser = await launchChromium();
  const shots: [string, string, number, number][] = [
    ['/', 'console-home.png', 1280, 900],
    [`/invoices/${pictured.invoice.id}`, 'console-invoice.png', 1280, 1100],
    [`/invoices/${pictured.invoice.id}`, 'console-invoice-phone.png', 390, 1400],
    ['/audit', 'console-audit.png', 1280, 900],
    ['/audit', 'console-audit-phone.png', 390, 1400],
    ['/operators', 'console-operators.png', 1280, 700],
    [`/tenants/${tenants[0].tenant.id}`, 'console-tenant.png', 1280, 1100],
  ];
  // What a read-only operator sees of the same tenant: everything but the controls.
  const readOnlyShots: [string, string, number, number][] = [
    [`/tenants/${tenants[0].tenant.id}`, 'console-tenant-read-only.png', 1280, 1100],
  ];
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const signIn = async (token: string) => {
    await context.clearCookies();
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${service.urls.admin}/console/`);
    await page.fill('input[name="token"]', token);
    await page.click('button:has-text("Sign in")');
    await page.locator('h1', { hasText: 'Overview' }).waitFor();
  };
  const take = async (pictures: [string, string, number, number][]) => {
    for (const [url, file, width, height] of pictures) {
      await page.setViewportSize({ width, height });
      await page.goto(`${service.urls.admin}/console${url}`);
      // An invoice's first attempt opened: what it sent beside what the partner answered.
      for (const details of await page.locator('.event.attempt').first().locator('details').all()) {
        await details.locator('summary').click();
      }
      await page.screenshot({ path: path.join(projectRoot, 'docs', file) });
      console.log(`docs/${file}`);
    }
  };
  // A mistyped token first: the audit page lists the refused sign-in.
  await page.goto(`${service.urls.admin}/console/sign-in`);
  await page.fill('input[name="token"]', 'pio_mistyped');
  await page.click('button:has-text("Sign in")');
  await signIn(lena.token);
  await take(readOnlyShots);
  await signIn(amina.token);
  await take(shots);
  // The portal's tenant's own invoice with a refused callback, for its payment request page.
  const portalPictured =
    shown.find(
      (item) =>
        item.invoice.tenant_id === tenants[0].tenant.id &&
        item.deliveries.length === 2 &&
        item.refused_notifications.length > 0,
    ) ?? shown.find((item) => item.invoice.tenant_id === tenants[0].tenant.id);
  await portalScreenshots(browser, tenants[0], portalPictured.invoice.id);
  await arabicGuideScreenshots(browser);
  await browser.close();
} finally {
  await partner.stop();
  await service.close();
  rmSync(dataDir, { recursive: true, force: true });
}
