import { describe, expect, it } from 'vitest';
import { CACHE_INVALIDATION_CHANNEL } from '../../src/cache.js';
import { useApps } from '../support/apps.js';
import { connectTo } from '../support/database.js';

const apps = useApps(['admin']);

const SOME_ID = '00000000-0000-4000-8000-000000000000';

async function createOperator(name: string, role: string) {
  const response = await apps.admin('POST', '/operators', { name, role });
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as { operator: { id: string; name: string; role: string }; token: string };
}

const as = (token: string, method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, payload?: unknown) =>
  apps.apps.admin!.inject({
    method,
    url,
    headers: { authorization: `Bearer ${token}` },
    ...(payload !== undefined && { payload: payload as object }),
  });

/** A console session of the token's operator: its cookie and CSRF token. */
async function consoleSession(token: string) {
  const signIn = await apps.apps.admin!.inject({
    method: 'POST',
    url: '/console/sign-in',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ token }).toString(),
  });
  expect(signIn.statusCode, signIn.body).toBe(303);
  const cookie = signIn.cookies.find((found) => found.name === 'pi_console_session')!;
  const home = await apps.apps.admin!.inject({
    method: 'GET',
    url: '/console/operators',
    cookies: { pi_console_session: cookie.value },
  });
  const csrf = /name="_csrf" value="([^"]+)"/.exec(home.body)?.[1];
  expect(csrf).toBeTruthy();
  return { cookie: cookie.value, csrf: csrf!, page: home.body };
}

describe('operators', () => {
  it('are named by an admin with a role; the token is shown once and listed only as a hint', async () => {
    const { operator, token } = await createOperator('Alice', 'operator');
    expect(operator).toMatchObject({ name: 'Alice', role: 'operator' });
    expect(token).toMatch(/^pio_[A-Za-z0-9_-]{43}$/);
    const listed = (await apps.admin('GET', '/operators')).json().operators;
    expect(listed).toContainEqual(expect.objectContaining({ id: operator.id, name: 'Alice', role: 'operator' }));
    expect(JSON.stringify(listed)).not.toContain(token);
    expect((await apps.admin('POST', '/operators', { name: 'Alice', role: 'admin' })).statusCode).toBe(409);
    expect((await apps.admin('POST', '/operators', { name: 'Bob', role: 'owner' })).statusCode).toBe(400);
    expect((await as(token, 'GET', '/admin/v1/tenants')).statusCode).toBe(200);
  });

  it('read-only: every change on every admin route, API and console, is refused with 403', async () => {
    const { token } = await createOperator('Reader', 'read-only');
    const session = await consoleSession(token);
    // Every authenticated route (the docs' "try it" relay carries partners' credentials to the public
    // hosts, not an operator's), whatever its method, but those open to every role.
    const authenticated = /^\/(admin\/v1|console)\//;
    const changes = apps.apps.admin!.adminRoutes.filter(
      (route) => authenticated.test(route.url) && route.role !== 'read-only',
    );
    const concrete = (url: string) => url.replace(/:(\w+)/g, (_match, name) => (name === 'language' ? 'en' : SOME_ID));
    const refused: string[] = [];
    for (const route of changes) {
      const url = concrete(route.url);
      const response = route.url.startsWith('/console/')
        ? await apps.apps.admin!.inject({
            method: route.method as 'POST',
            url,
            cookies: { pi_console_session: session.cookie },
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            payload: new URLSearchParams({ _csrf: session.csrf }).toString(),
          })
        : await as(token, route.method as 'POST', url, {});
      expect(response.statusCode, `${route.method} ${route.url}: ${response.body.slice(0, 200)}`).toBe(403);
      refused.push(`${route.method} ${route.url}`);
    }
    // Both hosts' parts are there: the API's changes and the console's forms.
    expect(refused).toContain('POST /admin/v1/tenants');
    expect(refused).toContain('DELETE /admin/v1/operators/:id');
    expect(refused).toContain('POST /console/tenants');
    console.info(`read-only refused on ${refused.length} admin routes (API and console)`);
    expect(refused.length).toBeGreaterThan(30);
    // Reads and signing out stay open.
    for (const route of apps.apps.admin!.adminRoutes.filter((found) => found.method === 'GET')) {
      if (!route.url.startsWith('/admin/v1/') || route.url.includes(':')) continue;
      const status = (await as(token, 'GET', route.url)).statusCode;
      expect(status === 200 || status === 400, `${route.url}: ${status}`).toBe(true);
    }
    expect(session.page).toContain('Reader (read-only)');
    expect(session.page).not.toContain('Name an operator');
  });

  it('operator role: changes everything but operators', async () => {
    const { token } = await createOperator('Olga', 'operator');
    const tenant = await as(token, 'POST', '/admin/v1/tenants', { name: 'By Olga', slug: 'by-olga', gateway: 'tap' });
    expect(tenant.statusCode).toBe(201);
    // Every admin's route of the API, enumerated from the app: operators and backups.
    const adminOnly = apps.apps.admin!.adminRoutes.filter(
      (route) => route.role === 'admin' && route.url.startsWith('/admin/v1/'),
    );
    expect(adminOnly.map((route) => `${route.method} ${route.url}`)).toContain('POST /admin/v1/backups');
    for (const route of adminOnly) {
      const url = route.url.replace(':id', SOME_ID);
      const response = await as(token, route.method as 'POST', url, { name: 'Mallory', role: 'admin' });
      expect(response.statusCode, `${route.method} ${route.url}`).toBe(403);
    }
    expect((await as(token, 'GET', '/admin/v1/operators')).statusCode).toBe(200);
  });

  it("a deleted operator's token and console session stop at once; other processes are notified", async () => {
    const { operator, token } = await createOperator('Dora', 'admin');
    const session = await consoleSession(token);
    expect((await as(token, 'GET', '/admin/v1/tenants')).statusCode).toBe(200);
    const listener = connectTo(apps.database.target.databaseUrl!);
    let notify: (payload: string) => void = () => {};
    const notified = new Promise<string>((resolve) => {
      notify = resolve;
    });
    try {
      // Resolves once the LISTEN has run: the deletion's notice cannot come before it.
      await listener.listen(CACHE_INVALIDATION_CHANNEL, notify);
      expect((await apps.admin('DELETE', `/operators/${operator.id}`)).statusCode).toBe(200);
      expect(await notified).toBe('operators');
    } finally {
      await listener.end();
    }
    expect((await as(token, 'GET', '/admin/v1/tenants')).statusCode).toBe(401);
    const page = await apps.apps.admin!.inject({
      method: 'GET',
      url: '/console/tenants',
      cookies: { pi_console_session: session.cookie },
    });
    expect(page.statusCode).toBe(303);
    expect(
      (await apps.admin('GET', '/operators')).json().operators.map((found: { id: string }) => found.id),
    ).not.toContain(operator.id);
    expect((await apps.admin('DELETE', `/operators/${operator.id}`)).statusCode).toBe(404);
  });

  it('a role change applies on the next request', async () => {
    const { operator, token } = await createOperator('Ravi', 'operator');
    expect((await apps.admin('PATCH', `/operators/${operator.id}`, { role: 'read-only' })).json().operator.role).toBe(
      'read-only',
    );
    expect((await as(token, 'POST', '/admin/v1/partner-keys', { name: 'k', scopes: ['cities:read'] })).statusCode).toBe(
      403,
    );
  });

  it('the audit trail names the operator of each change, filtered by operator, action and time', async () => {
    const before = new Date(Date.now() - 1000).toISOString();
    const first = await createOperator('Fatima', 'operator');
    const second = await createOperator('Goran', 'operator');
    const made = await as(first.token, 'POST', '/admin/v1/tenants', {
      name: 'By Fatima',
      slug: 'by-fatima',
      gateway: 'tap',
    });
    const tenantId = made.json().tenant.id;
    expect((await as(second.token, 'PATCH', `/admin/v1/tenants/${tenantId}`, { name: 'By Goran' })).statusCode).toBe(
      200,
    );

    const byFatima = (await apps.admin('GET', `/audit-events?operator_id=${first.operator.id}`)).json();
    expect(byFatima.results).toMatchObject([
      { action: 'tenant.create', actor: 'Fatima', operator: { id: first.operator.id, name: 'Fatima' } },
    ]);
    const patches = (await apps.admin('GET', `/audit-events?action=tenant.change&since=${before}`)).json();
    expect(patches.results).toMatchObject([
      { target_id: tenantId, operator: { id: second.operator.id, name: 'Goran' } },
    ]);
    expect(new URL(patches.next ?? 'http://x/?action=&since=').searchParams.has('since')).toBe(true);
    const future = new Date(Date.now() + 60_000).toISOString();
    expect((await apps.admin('GET', `/audit-events?since=${future}`)).json().count).toBe(0);
    const creations = (await apps.admin('GET', '/audit-events?action=operator.create')).json();
    expect(creations.results[0].operator).toEqual({ id: null, name: 'admin token' });
    expect((await apps.admin('GET', '/audit-events?operator_id=nope')).statusCode).toBe(400);
    expect((await apps.admin('GET', '/audit-events?since=yesterday')).statusCode).toBe(400);
    expect((await apps.admin('GET', '/audit-events?since=0001-01-01T00:00:00%2B14:00')).statusCode).toBe(400);

    const session = await consoleSession(first.token);
    const page = await apps.apps.admin!.inject({
      method: 'GET',
      url: `/console/audit?operator=${second.operator.id}`,
      cookies: { pi_console_session: session.cookie },
    });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Changed tenant ');
    expect(page.body).toContain('Goran');
    expect(page.body).not.toContain('Created tenant By Fatima');
    const yearZero = await apps.apps.admin!.inject({
      method: 'GET',
      url: '/console/audit?since=0000-06-01',
      cookies: { pi_console_session: session.cookie },
    });
    expect(yearZero.statusCode).toBe(400);
  });
});
