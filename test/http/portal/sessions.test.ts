// The partner portal's sign-in and isolation, in process: `POST /api/v1/portal-sessions/` with the
// tenant's SSO secret gives a one-time link (kept as a digest, audited) that opens a session of
// that tenant, mode and access; a used or expired link is refused; a session sees only its own
// tenant's and mode's data (another's invoice is a 404 page); read-only sessions, forms without
// the CSRF token or from another site, and ended sessions are refused.
import { sql } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { describe, expect, it } from 'vitest';
import { issuePortalLink, PORTAL_LINK_MINUTES } from '../../../src/tenants/index.js';
import { createInvoice, keyOf, notificationFor, notify } from '../../payments/support.js';
import { type TestApps, type TestTenant, useApps, useTenant } from '../../support/apps.js';
import { TEST_ADMIN_TOKEN } from '../../support/env.js';
import { loggerInto } from '../../support/logs.js';
import { waitFor } from '../../support/partner-endpoint.js';

interface Link {
  url: string;
  expires_at: string;
}

async function askForLink(service: TestApps, secret: string, body: object = {}): Promise<LightMyRequestResponse> {
  return service.apps.integrations!.inject({
    method: 'POST',
    url: '/api/v1/portal-sessions/',
    headers: { authorization: `Api-Key ${secret}` },
    payload: body,
  });
}

async function linkFor(service: TestApps, secret: string, body: object = {}): Promise<Link> {
  const response = await askForLink(service, secret, body);
  expect(response.statusCode, response.body).toBe(201);
  return response.json().data.portal_session;
}

const pathOf = (url: string) => {
  const parsed = new URL(url);
  return parsed.pathname + parsed.search;
};

/** Opens the link's session: its cookie header. */
async function signIn(service: TestApps, link: Link, headers: Record<string, string> = {}): Promise<string> {
  const response = await service.apps.portal!.inject({ method: 'GET', url: pathOf(link.url), headers });
  expect(response.statusCode, response.body).toBe(303);
  expect(response.headers.location).toBe('/');
  const cookie = response.cookies.find((item) => item.name === 'pi_portal_session');
  expect(cookie).toBeDefined();
  return `pi_portal_session=${cookie!.value}`;
}

function portalGet(service: TestApps, url: string, cookie: string, headers: Record<string, string> = {}) {
  return service.apps.portal!.inject({ method: 'GET', url, headers: { cookie, ...headers } });
}

/** A portal link from the console's tenant page, asked for by whoever `token` is. */
async function consoleLink(
  service: TestApps,
  token: string,
  tenantId: string,
  mode: 'live' | 'test',
  access: 'read' | 'write',
): Promise<{ link: Link; tenantPage: string }> {
  const console = service.apps.admin!;
  const signedIn = await console.inject({
    method: 'POST',
    url: '/console/sign-in',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: `token=${encodeURIComponent(token)}`,
  });
  const cookie = signedIn.cookies.map((item) => `${item.name}=${item.value}`).join('; ');
  const tenantPage = (await console.inject({ method: 'GET', url: `/console/tenants/${tenantId}`, headers: { cookie } }))
    .body;
  const csrf = /name="_csrf" value="([^"]+)"/.exec(tenantPage)![1];
  const asked = await console.inject({
    method: 'POST',
    url: `/console/tenants/${tenantId}/portal-link`,
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    payload: `_csrf=${encodeURIComponent(csrf)}&mode=${mode}&access=${access}`,
  });
  expect(asked.statusCode).toBe(200);
  const url = /value="(http[^"]+\/sign-in\?token=pis_portal_[^"]+)"/.exec(asked.body)![1];
  return { link: { url, expires_at: '' }, tenantPage };
}

/** The CSRF token of the session's forms, read from a page as a browser would. */
async function csrfOf(service: TestApps, cookie: string): Promise<string> {
  const body = (await portalGet(service, '/endpoint', cookie)).body;
  return /name="_csrf" value="([^"]+)"/.exec(body)![1];
}

async function testSecretOf(service: TestApps, tenant: TestTenant): Promise<string> {
  const issued = await service.admin('POST', `/tenants/${tenant.tenant.id}/credentials`, {
    kind: 'test_sso_hmac_secret',
  });
  return issued.json().secret;
}

describe('portal links and sessions', () => {
  const service = useApps(['integrations', 'portal', 'admin']);
  const tenant = useTenant(service, { test_payment_endpoint_url: 'https://sandbox.partner.example/requests' });
  const other = useTenant(service);

  it('gives a one-time link on the portal, kept as a digest and audited, that opens a session once', async () => {
    const before = Date.now();
    const link = await linkFor(service, tenant.credentials.sso_hmac_secret, { access: 'write', language: 'ar' });
    expect(link.url.startsWith(`${service.context.publicUrls.portal}/sign-in?token=pis_portal_`)).toBe(true);
    const expires = Date.parse(link.expires_at) - before;
    expect(expires).toBeGreaterThan(PORTAL_LINK_MINUTES * 60_000 - 5000);
    expect(expires).toBeLessThanOrEqual(PORTAL_LINK_MINUTES * 60_000 + 1000);

    const token = new URL(link.url).searchParams.get('token')!;
    const stored = await service.context.db.execute<Record<string, unknown>>(
      sql`select * from portal_links where tenant_id = ${tenant.tenant.id}`,
    );
    expect(stored).toHaveLength(1);
    expect(JSON.stringify(stored)).not.toContain(token);
    const audited = await service.context.db.execute<{ actor: string; action: string; fields: string[] }>(
      sql`select actor, action, fields from audit_events where target_id = ${tenant.tenant.id} order by occurred_at`,
    );
    expect(audited).toContainEqual({
      actor: `tenant ${tenant.tenant.slug} (live SSO secret)`,
      action: 'POST /api/v1/portal-sessions/',
      fields: ['access', 'language'],
    });

    const cookie = await signIn(service, link);
    const overview = await portalGet(service, '/', cookie);
    expect(overview.statusCode).toBe(200);
    expect(overview.body).toContain('<html lang="ar" dir="rtl">');
    expect(overview.body).toContain(tenant.tenant.name);
    const signedIn = await service.context.db.execute<{ action: string }>(
      sql`select action from audit_events where target_id = ${tenant.tenant.id} and action = 'portal sign-in'`,
    );
    expect(signedIn).toHaveLength(1);

    const again = await service.apps.portal!.inject({ method: 'GET', url: pathOf(link.url) });
    expect(again.statusCode).toBe(401);
    expect(again.body).toContain('it was used already, it expired');
    expect(again.headers['set-cookie']).toBeUndefined();
  });

  it("gives an operator the same link from the console's tenant page, per mode, audited under the operator", async () => {
    const { link, tenantPage } = await consoleLink(service, TEST_ADMIN_TOKEN, tenant.tenant.id, 'test', 'write');
    expect(tenantPage).toContain('Live portal link');
    expect(tenantPage).toContain('Test portal link');
    const session = await signIn(service, link);
    const overview = await portalGet(service, '/', session);
    expect(overview.body).toContain('test mode, read and write');
    const audited = await service.context.db.execute<{ action: string; actor: string }>(
      sql`select action, actor from audit_events where action = 'POST /console/tenants/:id/portal-link'`,
    );
    expect(audited).toHaveLength(1);
    expect(audited[0].actor).toMatch(/^console session /);
  });

  it('refuses an expired link, an unknown one and one of a deactivated tenant', async () => {
    const { token } = await issuePortalLink(
      service.context.db,
      {
        tenantId: tenant.tenant.id,
        mode: 'live',
        access: 'read',
        language: null,
        issuedBy: 'test',
        credentialId: null,
        operatorId: null,
      },
      new Date(Date.now() - (PORTAL_LINK_MINUTES * 60_000 + 1000)),
    );
    for (const url of [`/sign-in?token=${token}`, '/sign-in?token=pis_portal_nonsense', '/sign-in']) {
      const refused = await service.apps.portal!.inject({ method: 'GET', url });
      expect(refused.statusCode, url).toBe(401);
    }
    const inactive = await service.createTenant();
    const link = await linkFor(service, inactive.credentials.sso_hmac_secret);
    const cookie = await signIn(service, await linkFor(service, inactive.credentials.sso_hmac_secret));
    await service.admin('PATCH', `/tenants/${inactive.tenant.id}`, { is_active: false });
    expect((await service.apps.portal!.inject({ method: 'GET', url: pathOf(link.url) })).statusCode).toBe(401);
    expect((await portalGet(service, '/', cookie)).statusCode).toBe(401);
  });

  it('ends the links and sessions of an SSO secret once it is revoked, and of an operator once deleted', async () => {
    const issued = await service.admin('POST', `/tenants/${tenant.tenant.id}/credentials`, { kind: 'sso_hmac_secret' });
    expect(issued.statusCode, issued.body).toBe(201);
    const { id: secretId, secret } = issued.json();
    const bySecret = await signIn(service, await linkFor(service, secret, { access: 'write' }));
    const unusedBySecret = await linkFor(service, secret);
    const byOtherSecret = await signIn(service, await linkFor(service, tenant.credentials.sso_hmac_secret));

    const created = await service.admin('POST', '/operators', { name: 'Portal Linker', role: 'operator' });
    expect(created.statusCode, created.body).toBe(201);
    const { operator, token } = created.json();
    const byOperator = await signIn(
      service,
      (await consoleLink(service, token, tenant.tenant.id, 'live', 'read')).link,
    );
    const unusedByOperator = (await consoleLink(service, token, tenant.tenant.id, 'live', 'read')).link;
    const byAdminToken = await signIn(
      service,
      (await consoleLink(service, TEST_ADMIN_TOKEN, tenant.tenant.id, 'live', 'read')).link,
    );
    for (const cookie of [bySecret, byOtherSecret, byOperator, byAdminToken]) {
      expect((await portalGet(service, '/', cookie)).statusCode).toBe(200);
    }

    expect((await service.admin('DELETE', `/credentials/${secretId}`)).statusCode).toBe(200);
    expect((await portalGet(service, '/', bySecret)).statusCode).toBe(401);
    expect((await service.apps.portal!.inject({ method: 'GET', url: pathOf(unusedBySecret.url) })).statusCode).toBe(
      401,
    );
    expect((await service.admin('DELETE', `/operators/${operator.id}`)).statusCode).toBe(200);
    expect((await portalGet(service, '/', byOperator)).statusCode).toBe(401);
    expect((await service.apps.portal!.inject({ method: 'GET', url: pathOf(unusedByOperator.url) })).statusCode).toBe(
      401,
    );
    // What the revoked secret and the deleted operator did not ask for goes on.
    expect((await portalGet(service, '/', byOtherSecret)).statusCode).toBe(200);
    expect((await portalGet(service, '/', byAdminToken)).statusCode).toBe(200);
  });

  it('takes only `read` or `write` and `en` or `ar`, with the SSO secret', async () => {
    const refused = await askForLink(service, tenant.credentials.sso_hmac_secret, { access: 'admin' });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error.code).toBe('VALIDATION_ERROR');
    expect((await askForLink(service, tenant.credentials.sso_hmac_secret, { language: 'fr' })).statusCode).toBe(400);
    expect(
      (await askForLink(service, tenant.credentials.sso_hmac_secret, { tenant_id: other.tenant.id })).statusCode,
    ).toBe(400);
    expect((await askForLink(service, tenant.credentials.partner_api_key)).statusCode).toBe(401);
  });

  it('gives a read link without a body, declared JSON or not: both fields are optional', async () => {
    for (const headers of [{}, { 'content-type': 'application/json' }]) {
      const response = await service.apps.integrations!.inject({
        method: 'POST',
        url: '/api/v1/portal-sessions/',
        headers: { authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}`, ...headers },
      });
      expect(response.statusCode, response.body).toBe(201);
      const cookie = await signIn(service, response.json().data.portal_session);
      expect((await portalGet(service, '/', cookie)).statusCode).toBe(200);
    }
  });

  it("shows a session its own tenant's payment requests only: another tenant's is a 404 page", async () => {
    const own = await createInvoice(service, tenant, { amount: '123.45' });
    const theirs = await createInvoice(service, other, { amount: '678.90' });
    const cookie = await signIn(service, await linkFor(service, tenant.credentials.sso_hmac_secret));
    const list = await portalGet(service, '/payment-requests', cookie);
    expect(list.body).toContain(own.id.slice(0, 8));
    expect(list.body).not.toContain(theirs.id.slice(0, 8));
    expect((await portalGet(service, `/payment-requests/${own.id}`, cookie)).statusCode).toBe(200);
    const refused = await portalGet(service, `/payment-requests/${theirs.id}`, cookie);
    expect(refused.statusCode).toBe(404);
    expect(refused.headers['content-type']).toMatch(/^text\/html/);
    expect(refused.body).not.toContain('678.90');
    // Their callback, accepted, is theirs: not listed to this session even when asked for by invoice.
    const transaction = `txn_theirs_${Date.now()}`;
    expect(
      (await notify(service, notificationFor(theirs, { transaction_id: transaction }), keyOf(other))).statusCode,
    ).toBe(200);
    const callbacks = await portalGet(service, `/callbacks?invoice=${theirs.id}`, cookie);
    expect(callbacks.body).toContain('No callback matches.');
    expect(callbacks.body).not.toContain(transaction);
  });

  it('refreshes a payment request page only while no attempt has been made', async () => {
    // The tenant has no live endpoint: its first attempt fails at once, for good.
    const invoice = await createInvoice(service, tenant, { amount: '33.00' });
    const cookie = await signIn(service, await linkFor(service, tenant.credentials.sso_hmac_secret));
    const page = async () => (await portalGet(service, `/payment-requests/${invoice.id}`, cookie)).body;
    const failed = await waitFor('the failed attempt', async () => {
      const body = await page();
      return body.includes('Attempt 1') && body;
    });
    expect(failed).not.toContain('data-refresh-seconds');
    await service.context.database.executeSql('delete from payment_deliveries where invoice_id = $1', [invoice.id]);
    expect(await page()).toContain('data-refresh-seconds');
  });

  it("says why a callback was not applied in the session's language", async () => {
    const invoice = await createInvoice(service, tenant, { amount: '44.00' });
    const transaction = `txn_unknown_${Date.now()}`;
    const sent = await notify(
      service,
      notificationFor(invoice, { status: 'PAID', transaction_id: transaction }),
      keyOf(tenant),
    );
    expect(sent.statusCode).toBe(200);
    for (const [language, note] of [
      ['ar', 'لم يُطبَّق: حالة غير معروفة.'],
      ['en', 'Not applied: unknown status.'],
    ]) {
      const cookie = await signIn(service, await linkFor(service, tenant.credentials.sso_hmac_secret, { language }));
      const page = await portalGet(service, `/callbacks?invoice=${invoice.id}`, cookie);
      expect(page.body).toContain(note);
      if (language === 'ar') expect(page.body).not.toContain('unknown status');
    }
  });

  it('shows a test link test data only, and a live link no test data', async () => {
    const live = await createInvoice(service, tenant, { amount: '11.00' });
    const testSecret = await testSecretOf(service, tenant);
    const created = await service.apps.integrations!.inject({
      method: 'POST',
      url: '/api/v1/test/invoices/',
      headers: { authorization: `Api-Key ${testSecret}` },
      payload: { amount: '22.00', currency: 'SAR' },
    });
    const testInvoice = created.json().data.payment_request.invoice_id as string;

    const testCookie = await signIn(service, await linkFor(service, testSecret));
    const testList = await portalGet(service, '/payment-requests', testCookie);
    expect(testList.body).toContain(testInvoice.slice(0, 8));
    expect(testList.body).not.toContain(live.id.slice(0, 8));
    expect((await portalGet(service, `/payment-requests/${live.id}`, testCookie)).statusCode).toBe(404);
    expect((await portalGet(service, '/test-invoice', testCookie)).statusCode).toBe(200);

    const liveCookie = await signIn(service, await linkFor(service, tenant.credentials.sso_hmac_secret));
    expect((await portalGet(service, `/payment-requests/${testInvoice}`, liveCookie)).statusCode).toBe(404);
    expect((await portalGet(service, '/payment-requests', liveCookie)).body).not.toContain(testInvoice.slice(0, 8));
    expect((await portalGet(service, '/test-invoice', liveCookie)).statusCode).toBe(404);
  });

  it('refuses changes from a read-only session, without the CSRF token, or from another site', async () => {
    const invoice = await createInvoice(service, tenant);
    const form = (csrf: string) => ({
      'content-type': 'application/x-www-form-urlencoded',
      payload: `_csrf=${encodeURIComponent(csrf)}`,
    });
    const post = (cookie: string, csrf: string, headers: Record<string, string> = {}) => {
      const { payload, ...formHeaders } = form(csrf);
      return service.apps.portal!.inject({
        method: 'POST',
        url: `/payment-requests/${invoice.id}/resend`,
        headers: { cookie, ...formHeaders, ...headers },
        payload,
      });
    };
    const reader = await signIn(service, await linkFor(service, tenant.credentials.sso_hmac_secret));
    const readOnly = await post(reader, await csrfOf(service, reader));
    expect(readOnly.statusCode).toBe(403);
    expect(readOnly.body).toContain('read only');

    const writer = await signIn(
      service,
      await linkFor(service, tenant.credentials.sso_hmac_secret, { access: 'write' }),
    );
    const csrf = await csrfOf(service, writer);
    expect((await post(writer, 'not-the-token')).statusCode).toBe(403);
    expect((await post(writer, csrf, { origin: 'https://evil.example' })).statusCode).toBe(403);
    const resent = await post(writer, csrf);
    expect(resent.statusCode).toBe(303);
    expect(resent.headers.location).toBe(`/payment-requests/${invoice.id}?notice=request.resent`);
    // The other tenant's invoice, even with write access: a 404.
    const theirs = await createInvoice(service, other);
    const refused = await service.apps.portal!.inject({
      method: 'POST',
      url: `/payment-requests/${theirs.id}/resend`,
      headers: { cookie: writer, 'content-type': 'application/x-www-form-urlencoded' },
      payload: `_csrf=${encodeURIComponent(csrf)}`,
    });
    expect(refused.statusCode).toBe(404);
  });

  it('ends a session on the server at sign-out: its cookie opens nothing after', async () => {
    const cookie = await signIn(service, await linkFor(service, tenant.credentials.sso_hmac_secret));
    const csrf = await csrfOf(service, cookie);
    const out = await service.apps.portal!.inject({
      method: 'POST',
      url: '/sign-out',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: `_csrf=${encodeURIComponent(csrf)}`,
    });
    expect(out.statusCode).toBe(200);
    expect(out.body).toContain('You are signed out.');
    const after = await portalGet(service, '/', cookie);
    expect(after.statusCode).toBe(401);
    expect(after.body).toContain('Your session has ended');
  });

  it("speaks the link's language, else the browser's, else English", async () => {
    const secret = tenant.credentials.sso_hmac_secret;
    const english = await signIn(service, await linkFor(service, secret, { language: 'en' }));
    const page = (cookie: string, language?: string) =>
      portalGet(service, '/', cookie, language ? { 'accept-language': language } : {});
    expect((await page(english, 'ar')).body).toContain('<html lang="en" dir="ltr">');
    const browser = await signIn(service, await linkFor(service, secret));
    expect((await page(browser, 'ar-SA,ar;q=0.9,en;q=0.8')).body).toContain('<html lang="ar" dir="rtl">');
    expect((await page(browser, 'fr-FR, en;q=0.5, ar;q=0.7')).body).toContain('<html lang="ar" dir="rtl">');
    expect((await page(browser, 'fr')).body).toContain('<html lang="en" dir="ltr">');
    expect((await page(browser)).body).toContain('<html lang="en" dir="ltr">');
  });

  it("sends the pages' protections: CSP without inline script, never framed, HttpOnly Lax cookie", async () => {
    const link = await linkFor(service, tenant.credentials.sso_hmac_secret);
    const opened = await service.apps.portal!.inject({ method: 'GET', url: pathOf(link.url) });
    const cookie = opened.cookies.find((item) => item.name === 'pi_portal_session')!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });
    const page = await portalGet(service, '/', `pi_portal_session=${cookie.value}`);
    const policy = page.headers['content-security-policy'] as string;
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).not.toContain('unsafe-inline');
    expect(page.headers['x-frame-options']).toBe('SAMEORIGIN');
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.body).not.toMatch(/<script(?![^>]*\bsrc=)/);
  });
});

describe('a portal embedded by the platform (PORTAL_FRAME_ANCESTORS)', () => {
  const service = useApps(['integrations', 'portal'], {
    env: { PORTAL_FRAME_ANCESTORS: 'https://dashboard.platform.example' },
  });
  const tenant = useTenant(service);

  it('lets only that origin frame it, with a cookie the frame sends (SameSite=None, Secure, Partitioned)', async () => {
    const link = await linkFor(service, tenant.credentials.sso_hmac_secret);
    const opened = await service.apps.portal!.inject({ method: 'GET', url: pathOf(link.url) });
    expect(opened.headers['content-security-policy']).toContain('frame-ancestors https://dashboard.platform.example');
    expect(opened.headers['x-frame-options']).toBeUndefined();
    const setCookie = String(opened.headers['set-cookie']);
    expect(setCookie).toMatch(/SameSite=None/);
    expect(setCookie).toMatch(/Secure/);
    expect(setCookie).toMatch(/Partitioned/);
    expect(setCookie).toMatch(/HttpOnly/);
  });
});

describe('portal links in the logs', () => {
  const lines: string[] = [];
  const service = useApps(['integrations', 'portal'], { logger: loggerInto(lines, 'info') });
  const tenant = useTenant(service);

  it('never writes a link token: the sign-in request is logged with it redacted', async () => {
    const link = await linkFor(service, tenant.credentials.sso_hmac_secret);
    const token = new URL(link.url).searchParams.get('token')!;
    await signIn(service, link);
    const signInLines = lines.filter((line) => line.includes('/sign-in'));
    expect(signInLines.join('\n')).toContain('[redacted]');
    expect(lines.join('\n')).not.toContain(token);
    expect(lines.join('\n')).not.toContain(token.slice('pis_portal_'.length));
  });
});
