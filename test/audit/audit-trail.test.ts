// The audit trail: every change the admin API offers leaves an event (who, what, when, from where,
// on what, never a secret), listed paged and filtered by target by the API and by partnerctl.

import type { Static } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { buildAdminApp } from '../../src/http/admin/app.js';
import type { AuditEvent as AuditEventShape } from '../../src/http/admin/audit.js';
import { createLogger } from '../../src/logger.js';
import { TEST_ADMIN_TOKEN } from '../support/env.js';
import { partnerctl } from '../support/process.js';
import { useService } from '../support/service.js';

type AuditEvent = Static<typeof AuditEventShape>;

const point = (lon: number, lat: number) => ({ type: 'Point', coordinates: [lon, lat] });

const service = useService();

/** A console session over HTTP: its cookie and CSRF token, and form posts with them. */
async function consoleSession() {
  const base = `${service.urls.admin}/console`;
  const signIn = await fetch(`${base}/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: TEST_ADMIN_TOKEN }),
    redirect: 'manual',
  });
  const cookie = signIn.headers
    .getSetCookie()
    .map((set) => set.split(';')[0])
    .join('; ');
  const home = await (await fetch(`${base}/`, { headers: { cookie } })).text();
  const csrf = /name="_csrf" value="([^"]+)"/.exec(home)![1];
  return {
    get: async (path: string) => (await fetch(`${base}${path}`, { headers: { cookie } })).text(),
    post: (path: string, fields: Record<string, string>) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ _csrf: csrf, ...fields }),
        redirect: 'manual',
      }),
  };
}

async function eventsFor(targetId: string): Promise<AuditEvent[]> {
  const response = await service.admin('GET', `/audit-events?target_id=${encodeURIComponent(targetId)}&limit=100`);
  expect(response.statusCode).toBe(200);
  return response.json().results;
}

/** The admin API's changes: every route of its document but GET ones, as `METHOD /admin/v1/...`. */
async function documentedChanges(): Promise<string[]> {
  const document = (await service.admin('GET', '/openapi.json')).json();
  return Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap(([path, methods]) =>
    Object.keys(methods)
      .filter((method) => !['get', 'head', 'options'].includes(method))
      .map((method) => `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`),
  );
}

/** The name each route's change is recorded under, whichever route made it. */
const ACTION_NAMES: Record<string, string> = {
  'POST /admin/v1/tenants': 'tenant.create',
  'PATCH /admin/v1/tenants/:id': 'tenant.change',
  'POST /admin/v1/tenants/:id/payment-endpoint/ping': 'tenant.ping',
  'POST /admin/v1/tenants/:id/credentials': 'credential.issue',
  'DELETE /admin/v1/credentials/:id': 'credential.revoke',
  'POST /admin/v1/partner-keys': 'partner_key.create',
  'DELETE /admin/v1/partner-keys/:id': 'partner_key.revoke',
  'POST /admin/v1/countries': 'country.create',
  'PATCH /admin/v1/countries/:id': 'country.change',
  'POST /admin/v1/cities': 'city.create',
  'PATCH /admin/v1/cities/:id': 'city.change',
  'POST /admin/v1/cities/:id/attractions': 'attraction.create',
  'PUT /admin/v1/default-prompts/:language': 'default_prompts.replace',
  'POST /admin/v1/trips': 'trip.create',
  'POST /admin/v1/invoices': 'invoice.create',
  'POST /admin/v1/invoices/:id/payment-requests': 'invoice.resend',
  'POST /admin/v1/secrets/rekey': 'secrets.rekey',
  'POST /admin/v1/operators': 'operator.create',
  'PATCH /admin/v1/operators/:id': 'operator.change',
  'DELETE /admin/v1/operators/:id': 'operator.delete',
  'POST /admin/v1/backups': 'backup.create',
  'POST /admin/v1/prunes': 'retention.prune',
};

describe('audit trail', () => {
  it('records an event for each change the admin API offers, with who, what, where and the target', async () => {
    const secrets: string[] = [];
    const changes: {
      action: string;
      target: string | null;
      fields: string[];
      status: number;
      requestId: string;
    }[] = [];
    /** Makes a change; its target is given, or the id of what it created. */
    const change = async (
      method: 'POST' | 'PATCH' | 'PUT' | 'DELETE',
      path: string,
      body: unknown,
      target?: string | null,
    ) => {
      const response = await service.admin(method, path, body);
      expect(response.statusCode, `${method} ${path}: ${response.body}`).toBeLessThan(300);
      const answer = response.json();
      const route = `${method} /admin/v1${path.replace(/\/[0-9a-f-]{36}(?=\/|$)/g, '/:id').replace(/\/ar$/, '/:language')}`;
      const fields = body && typeof body === 'object' ? Object.keys(body) : [];
      changes.push({
        action: route,
        target: target !== undefined ? target : answer.id || (Object.values(answer)[0] as { id: string }).id,
        fields,
        status: response.statusCode,
        requestId: response.headers['x-request-id'] as string,
      });
      return answer;
    };

    const created = await change('POST', '/tenants', {
      name: 'Audited',
      slug: 'audited',
      gateway: 'tap',
      payment_endpoint_url: 'https://partner.example/pay?access=hunter2-password',
    });
    secrets.push(...Object.values(created.credentials as Record<string, string>), 'hunter2-password');
    const tenantId = created.tenant.id;
    await change('PATCH', `/tenants/${tenantId}`, { name: 'Audited again' }, tenantId);
    await change('POST', `/tenants/${tenantId}/payment-endpoint/ping`, undefined, tenantId);
    const issued = await change('POST', `/tenants/${tenantId}/credentials`, { kind: 'partner_api_key' }, tenantId);
    secrets.push(issued.secret);
    await change('DELETE', `/credentials/${issued.id}`, undefined, issued.id);
    const key = await change('POST', '/partner-keys', { name: 'BI', scopes: ['countries:read'] });
    secrets.push(key.key);
    await change('DELETE', `/partner-keys/${key.id}`, undefined, key.id);
    const { country } = await change('POST', '/countries', { code: 'XQ', name: 'Audit Land', phone_code: '+999' });
    await change('PATCH', `/countries/${country.id}`, { supported: true }, country.id);
    const { city } = await change('POST', '/cities', {
      name: 'Audit City',
      country: country.id,
      coordinates: point(10, 10),
    });
    await change('PATCH', `/cities/${city.id}`, { supported: true }, city.id);
    await change('POST', `/cities/${city.id}/attractions`, { name: 'Audit Tower' }, city.id);
    await change('PUT', '/default-prompts/ar', { prompts: [{ text: 'أين أسافر؟' }] }, 'ar');
    await change('POST', '/trips', { tenant_id: tenantId, title: 'Audited trip' });
    const { invoice } = await change('POST', '/invoices', { tenant_id: tenantId, amount: '10.00', currency: 'SAR' });
    await change('POST', `/invoices/${invoice.id}/payment-requests`, undefined, invoice.id);
    await change('POST', '/secrets/rekey', undefined, null);
    await change('POST', '/prunes', undefined, null);
    const named = await change('POST', '/operators', { name: 'Audited operator', role: 'read-only' });
    secrets.push(named.token);
    await change('PATCH', `/operators/${named.operator.id}`, { role: 'operator' }, named.operator.id);
    await change('DELETE', `/operators/${named.operator.id}`, undefined, named.operator.id);
    // A backup answers a file, not JSON: recorded all the same.
    const backup = await service.admin('POST', '/backups');
    expect(backup.statusCode).toBe(200);
    changes.push({
      action: 'POST /admin/v1/backups',
      target: null,
      fields: [],
      status: 200,
      requestId: backup.headers['x-request-id'] as string,
    });

    // Every change of the API's document was made above: a route added without a case here fails.
    expect(new Set(changes.map((made) => made.action))).toEqual(new Set(await documentedChanges()));

    const recorded: AuditEvent[] = (await service.admin('GET', '/audit-events?limit=100')).json().results;
    for (const made of changes) {
      const event = recorded.find((candidate) => candidate.request_id === made.requestId);
      expect(event, `${made.action} on ${made.target}`).toMatchObject({
        actor: 'admin token',
        action: ACTION_NAMES[made.action],
        route: made.action,
        summary: expect.any(String),
        target_id: made.target,
        fields: made.fields,
        status: made.status,
        address: '127.0.0.1',
      });
      expect(Date.now() - Date.parse(event!.occurred_at)).toBeLessThan(60_000);
      if (made.target) expect((await eventsFor(made.target)).map((found) => found.id)).toContain(event!.id);
    }
    const byRoute = (route: string) => recorded.find((event) => event.route === route)!;
    expect(byRoute('POST /admin/v1/tenants')).toMatchObject({
      summary: 'Created tenant Audited',
      target_type: 'tenant',
      target_label: 'Audited',
    });
    expect(byRoute('PATCH /admin/v1/tenants/:id')).toMatchObject({
      summary: 'Changed tenant Audited again',
      changes: [{ field: 'name', before: 'Audited', after: 'Audited again' }],
    });
    expect(byRoute('POST /admin/v1/tenants/:id/credentials').summary).toBe(
      'Issued a partner API key for tenant Audited again',
    );
    expect(byRoute('PATCH /admin/v1/cities/:id')).toMatchObject({
      summary: 'Changed city Audit City',
      changes: [{ field: 'supported', before: false, after: true }],
    });
    expect(byRoute('PATCH /admin/v1/operators/:id')).toMatchObject({
      summary: 'Changed operator Audited operator',
      changes: [{ field: 'role', before: 'read-only', after: 'operator' }],
    });
    const everything = JSON.stringify((await service.admin('GET', '/audit-events?limit=100')).json());
    for (const secret of secrets) expect(everything).not.toContain(secret);
  });

  it("records an invoice's creation in the transaction that creates it, and a repeat's on its own", async () => {
    const { tenant } = (
      await service.admin('POST', '/tenants', { name: 'Atomic', slug: 'atomic', gateway: 'tap' })
    ).json();
    const body = { tenant_id: tenant.id, amount: '12.00', currency: 'SAR' };
    const headers = { 'idempotency-key': 'audited-once' };
    const created = await service.apps.admin!.inject({
      method: 'POST',
      url: '/admin/v1/invoices',
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, ...headers },
      payload: body,
    });
    expect(created.statusCode).toBe(201);
    const invoiceId = created.json().invoice.id;
    // Rows written by one transaction carry its id.
    const { rows } = await service.context.database.executeSql<{ same: boolean }>(
      `select i.xmin = a.xmin as same from invoices i join audit_events a on a.target_id = i.id::text where i.id = $1`,
      [invoiceId],
    );
    expect(rows).toEqual([{ same: true }]);
    const repeated = await service.apps.admin!.inject({
      method: 'POST',
      url: '/admin/v1/invoices',
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, ...headers },
      payload: body,
    });
    expect(repeated.headers['idempotent-replayed']).toBe('true');
    const events = await eventsFor(invoiceId);
    expect(events.map((event) => [event.action, event.route, event.status, event.fields])).toEqual([
      ['invoice.create', 'POST /admin/v1/invoices', 201, ['tenant_id', 'amount', 'currency']],
      ['invoice.create', 'POST /admin/v1/invoices', 201, ['tenant_id', 'amount', 'currency']],
    ]);
    expect(events[0]).toMatchObject({
      summary: `Created invoice ${invoiceId.slice(0, 8)} (12.00 SAR)`,
      target_type: 'invoice',
      target_label: `${invoiceId.slice(0, 8)} (12.00 SAR)`,
    });
  });

  it('records no reads, no refused changes and no unauthenticated attempts', async () => {
    const { tenant } = await service.createTenant();
    const before = (await eventsFor(tenant.id)).length;
    await service.admin('GET', `/tenants/${tenant.id}`);
    expect((await service.admin('PATCH', `/tenants/${tenant.id}`, { gateway: 'nope' })).statusCode).toBe(400);
    // A change that names nothing to change.
    const empty = await service.admin('PATCH', `/tenants/${tenant.id}`, {});
    expect(empty.statusCode).toBe(400);
    expect(empty.json().error.details).toEqual([
      expect.objectContaining({ field: '(root)', message: expect.stringMatching(/^must have at least one of name, /) }),
    ]);
    const anonymous = await service.apps.admin!.inject({
      method: 'PATCH',
      url: `/admin/v1/tenants/${tenant.id}`,
      payload: { name: 'x' },
    });
    expect(anonymous.statusCode).toBe(401);
    expect(await eventsFor(tenant.id)).toHaveLength(before);
    // A console form sent back with its error (a redirect, not a 4xx) changed nothing either.
    const count = async () => (await service.admin('GET', '/audit-events?limit=1')).json().count as number;
    const recorded = await count();
    const refused = await (await consoleSession()).post('/prompts/en', { text: '', _back: '/console/prompts/en' });
    expect(refused.status).toBe(303);
    // The sign-in of the session is the one event.
    expect(await count()).toBe(recorded + 1);
  });

  it('keeps a gateway no longer supported when the console saves another field of the tenant', async () => {
    const { tenant } = await service.createTenant({ gateway: 'tap' });
    await service.context.database.executeSql(`update tenants set gateway = 'legacy' where id = $1`, [tenant.id]);
    const session = await consoleSession();
    const shown = await session.get(`/tenants/${tenant.id}`);
    expect(shown).toContain('<option value="" selected>legacy (no longer supported: kept)</option>');
    const saved = await session.post(`/tenants/${tenant.id}`, { name: 'Renamed', gateway: '' });
    expect(saved.status).toBe(303);
    const after = (await service.admin('GET', `/tenants/${tenant.id}`)).json().tenant;
    expect(after).toMatchObject({ name: 'Renamed', gateway: 'legacy' });
  });

  it('lists newest first, paged with links, filtered by target', async () => {
    const { tenant } = await service.createTenant();
    for (const name of ['one', 'two', 'three']) {
      expect((await service.admin('PATCH', `/tenants/${tenant.id}`, { name })).statusCode).toBe(200);
    }
    const first = (await service.admin('GET', `/audit-events?target_id=${tenant.id}&limit=2`)).json();
    expect(first.count).toBe(4);
    expect(first.results.map((event: AuditEvent) => event.action)).toEqual(['tenant.change', 'tenant.change']);
    expect(first.previous).toBeNull();
    const next = new URL(first.next);
    expect(next.origin).toBe(service.urls.admin);
    expect(Object.fromEntries(next.searchParams)).toEqual({ target_id: tenant.id, limit: '2', offset: '2' });
    const second = (await service.admin('GET', `${next.pathname.replace('/admin/v1', '')}${next.search}`)).json();
    expect(second.results.map((event: AuditEvent) => event.action)).toEqual(['tenant.change', 'tenant.create']);
    expect(second.next).toBeNull();
    const times = [...first.results, ...second.results].map((event: AuditEvent) => event.occurred_at);
    expect([...times].sort().reverse()).toEqual(times);

    const all = (await service.admin('GET', '/audit-events?limit=1')).json();
    expect(all.count).toBeGreaterThan(4);
    expect((await service.admin('GET', '/audit-events?limit=0')).statusCode).toBe(400);
    expect((await service.admin('GET', `/audit-events?target_id=${'x'.repeat(201)}`)).statusCode).toBe(400);
  });

  it('covers routes added later, with the actor their authentication names', async () => {
    const app = await buildAdminApp(service.context, createLogger('silent'), {
      documents: { integrations: async () => ({}), backend: async () => ({}) },
    });
    app.post('/admin/console/sign-in', async (request) => {
      request.adminActor = 'console session alice';
      return { id: 'session-1' };
    });
    app.post('/admin/console/anonymous', async () => ({ ok: true }));
    try {
      expect((await app.inject({ method: 'POST', url: '/admin/console/sign-in' })).statusCode).toBe(200);
      expect((await app.inject({ method: 'POST', url: '/admin/console/anonymous' })).statusCode).toBe(200);
    } finally {
      await app.close();
    }
    expect(await eventsFor('session-1')).toMatchObject([
      { actor: 'console session alice', action: 'POST /admin/console/sign-in', target_id: 'session-1' },
    ]);
    const latest = (await service.admin('GET', '/audit-events?limit=1')).json().results[0];
    expect(latest).toMatchObject({
      actor: 'unauthenticated',
      action: 'POST /admin/console/anonymous',
      target_id: null,
    });
  });

  it("records the console's sign-in under the session it started, never the token", async () => {
    const base = service.urls.admin!;
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const signIn = await fetch(`${base}/console/sign-in`, {
      method: 'POST',
      headers: form,
      body: new URLSearchParams({ token: TEST_ADMIN_TOKEN }),
      redirect: 'manual',
    });
    expect(signIn.status).toBe(303);
    const [signedIn] = (await service.admin('GET', '/audit-events?limit=1')).json().results;
    expect(signedIn).toMatchObject({
      action: 'console.sign_in',
      route: 'POST /console/sign-in',
      summary: 'Signed in to the console',
      actor: expect.stringMatching(/^console session /),
      fields: ['token'],
      status: 303,
    });
    expect(JSON.stringify(signedIn)).not.toContain(TEST_ADMIN_TOKEN);
  });

  it('records a refused console sign-in: from where and what kind of token, never the token', async () => {
    const tried = `pio_${'x'.repeat(40)}wxyz`;
    const refused = await fetch(`${service.urls.admin}/console/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: tried }),
      redirect: 'manual',
    });
    expect(refused.status).toBe(401);
    const [failed] = (await service.admin('GET', '/audit-events?action=console.sign_in_failed&limit=1')).json().results;
    expect(failed).toMatchObject({
      actor: 'unauthenticated',
      action: 'console.sign_in_failed',
      summary: 'Failed sign-in to the console with an unknown operator token',
      status: 401,
      address: '127.0.0.1',
      operator: null,
    });
    expect(JSON.stringify(failed)).not.toContain('xxxx');
    expect(JSON.stringify(failed)).not.toContain('wxyz');
  });

  it('names the same change the same through the API and the console, with the values before and after', async () => {
    const { tenant } = await service.createTenant({ name: 'Twice Travel' });
    expect((await service.admin('PATCH', `/tenants/${tenant.id}`, { is_active: false })).statusCode).toBe(200);
    const console = await consoleSession();
    const activated = await console.post(`/tenants/${tenant.id}/activation`, { is_active: 'true' });
    expect(activated.status).toBe(303);
    const deactivated = await console.post(`/tenants/${tenant.id}/activation`, { is_active: 'false' });
    expect(deactivated.status).toBe(303);
    const events = (await eventsFor(tenant.id)).slice(0, 3).reverse();
    expect(events.map(({ action, route, summary, changes }) => ({ action, route, summary, changes }))).toEqual([
      {
        action: 'tenant.deactivate',
        route: 'PATCH /admin/v1/tenants/:id',
        summary: 'Deactivated tenant Twice Travel',
        changes: [{ field: 'is_active', before: true, after: false }],
      },
      {
        action: 'tenant.activate',
        route: 'POST /console/tenants/:id/activation',
        summary: 'Activated tenant Twice Travel',
        changes: [{ field: 'is_active', before: false, after: true }],
      },
      {
        action: 'tenant.deactivate',
        route: 'POST /console/tenants/:id/activation',
        summary: 'Deactivated tenant Twice Travel',
        changes: [{ field: 'is_active', before: true, after: false }],
      },
    ]);
    // A console creation names what it created, as the API's does.
    const created = await console.post('/tenants', {
      name: 'Console Made',
      slug: `console-${Date.now()}`,
      gateway: 'tap',
    });
    expect(created.status).toBe(200);
    const [made] = (await service.admin('GET', '/audit-events?action=tenant.create&limit=1')).json().results;
    expect(made).toMatchObject({
      route: 'POST /console/tenants',
      summary: 'Created tenant Console Made',
      target_type: 'tenant',
      target_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
  });

  it('is listed by partnerctl audit list', async () => {
    const { tenant } = await service.createTenant();
    const env = { ADMIN_URL: service.urls.admin!, ADMIN_TOKEN: TEST_ADMIN_TOKEN };
    const listed = await partnerctl(['audit', 'list', '--target', tenant.id, '--json'], env);
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout).results).toMatchObject([
      { actor: 'admin token', action: 'tenant.create', target_id: tenant.id },
    ]);
    const human = await partnerctl(['audit', 'list', '--target', tenant.id], env);
    expect(human.stdout).toContain(`Created tenant ${tenant.name}`);
    expect(human.stdout).toContain('1 of 1');
    const refused = await partnerctl(['audit', 'list', '--limit', 'ten'], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('--limit must be a whole number');
  });
});
