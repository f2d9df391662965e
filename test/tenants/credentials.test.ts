import { describe, expect, it, vi } from 'vitest';
import { resolveBackendPartnerKey, resolvePartnerApiKey, resolveSsoSecret } from '../../src/tenants/credentials.js';
import { useApps, useTenant } from '../support/apps.js';
import { TEST_ADMIN_TOKEN } from '../support/env.js';
import { waitFor } from '../support/partner-endpoint.js';

const service = useApps(['admin']);

const db = () => service.context.db;
const caches = () => service.context.caches;
/** How often, at most, a credential's use is written ("at most once a minute"). */
const A_MINUTE_MS = 60_000;

async function partnerKey(body: Record<string, unknown>) {
  const response = await service.admin('POST', '/partner-keys', body);
  expect(response.statusCode).toBe(201);
  return response.json() as { id: string; key: string; scopes: string[] };
}

async function resolvedTenantIds(secret: string) {
  return {
    sso: (await resolveSsoSecret(db(), caches(), secret))?.tenant.id ?? null,
    partnerApiKey: (await resolvePartnerApiKey(db(), caches(), secret))?.tenant.id ?? null,
    backend: (await resolveBackendPartnerKey(db(), caches(), secret))?.tenantId ?? null,
  };
}

describe('tenant credentials', () => {
  const acme = useTenant(service);
  const other = useTenant(service);

  it('gives a new tenant three secrets, each resolving to it only through its own resolver', async () => {
    const { sso_hmac_secret, partner_api_key, payment_endpoint_secret } = acme.credentials;
    expect(await resolvedTenantIds(sso_hmac_secret)).toEqual({
      sso: acme.tenant.id,
      partnerApiKey: null,
      backend: null,
    });
    expect(await resolvedTenantIds(partner_api_key)).toEqual({
      sso: null,
      partnerApiKey: acme.tenant.id,
      backend: null,
    });
    expect(await resolvedTenantIds(payment_endpoint_secret)).toEqual({ sso: null, partnerApiKey: null, backend: null });
    expect(await resolvedTenantIds(other.credentials.sso_hmac_secret)).toEqual({
      sso: other.tenant.id,
      partnerApiKey: null,
      backend: null,
    });
  });

  it('issues the test SSO secret and test partner key too when the tenant is made with a test endpoint', async () => {
    const withTest = await service.admin('POST', '/tenants', {
      name: 'Sandboxed',
      slug: `sandboxed-${Date.now()}`,
      gateway: 'tap',
      test_payment_endpoint_url: 'https://sandbox.partner.example/requests',
    });
    expect(withTest.statusCode, withTest.body).toBe(201);
    const { tenant, credentials } = withTest.json();
    expect(Object.keys(credentials).sort()).toEqual([
      'partner_api_key',
      'payment_endpoint_secret',
      'sso_hmac_secret',
      'test_partner_api_key',
      'test_sso_hmac_secret',
    ]);
    expect(credentials.test_sso_hmac_secret).toMatch(/^pis_test_sso_/);
    expect(credentials.test_partner_api_key).toMatch(/^pis_test_pay_/);
    expect(await resolveSsoSecret(db(), caches(), credentials.test_sso_hmac_secret)).toMatchObject({
      tenant: { id: tenant.id },
      mode: 'test',
    });
    expect(await resolvePartnerApiKey(db(), caches(), credentials.test_partner_api_key)).toMatchObject({
      tenant: { id: tenant.id },
      mode: 'test',
    });
    // Without a test endpoint: the three live secrets only, as before.
    expect(Object.keys(acme.credentials).sort()).toEqual([
      'partner_api_key',
      'payment_endpoint_secret',
      'sso_hmac_secret',
    ]);
  });

  it('answers nobody for unknown, truncated, padded and empty secrets', async () => {
    const secret = acme.credentials.sso_hmac_secret;
    for (const presented of ['', 'pis_sso_nope', secret.slice(0, -1), `${secret} `, secret.toUpperCase(), undefined]) {
      expect(await resolveSsoSecret(db(), caches(), presented)).toBeNull();
    }
  });

  it('keeps a rotated secret and its predecessor working until the predecessor is revoked', async () => {
    const tenant = await service.createTenant();
    const issued = await service.admin('POST', `/tenants/${tenant.tenant.id}/credentials`, { kind: 'sso_hmac_secret' });
    expect(issued.statusCode).toBe(201);
    const { id: newId, secret: newSecret, kind } = issued.json();
    expect(kind).toBe('sso_hmac_secret');
    expect((await resolveSsoSecret(db(), caches(), newSecret))?.tenant.id).toBe(tenant.tenant.id);
    expect((await resolveSsoSecret(db(), caches(), tenant.credentials.sso_hmac_secret))?.tenant.id).toBe(
      tenant.tenant.id,
    );

    const listed = (await service.admin('GET', `/tenants/${tenant.tenant.id}/credentials`)).json().credentials;
    const predecessor = listed.find(
      (row: { kind: string; id: string }) => row.kind === 'sso_hmac_secret' && row.id !== newId,
    );
    const revoked = await service.admin('DELETE', `/credentials/${predecessor.id}`);
    expect(revoked.statusCode).toBe(200);
    expect(revoked.json().credential.revoked_at).not.toBeNull();

    expect(await resolveSsoSecret(db(), caches(), tenant.credentials.sso_hmac_secret)).toBeNull();
    expect((await resolveSsoSecret(db(), caches(), newSecret))?.tenant.id).toBe(tenant.tenant.id);
  });

  it("resolves none of a deactivated tenant's secrets, its backend keys included, until reactivated", async () => {
    const tenant = await service.createTenant();
    const key = await partnerKey({ name: 'tenant key', scopes: ['cities:read'], tenant_id: tenant.tenant.id });
    const secrets = [tenant.credentials.sso_hmac_secret, tenant.credentials.partner_api_key, key.key];

    const deactivated = await service.admin('PATCH', `/tenants/${tenant.tenant.id}`, { is_active: false });
    expect(deactivated.json().tenant.is_active).toBe(false);
    for (const secret of secrets)
      expect(await resolvedTenantIds(secret)).toEqual({ sso: null, partnerApiKey: null, backend: null });

    await service.admin('PATCH', `/tenants/${tenant.tenant.id}`, { is_active: true });
    expect((await resolveSsoSecret(db(), caches(), secrets[0]))?.tenant.id).toBe(tenant.tenant.id);
    expect((await resolvePartnerApiKey(db(), caches(), secrets[1]))?.tenant.id).toBe(tenant.tenant.id);
    expect((await resolveBackendPartnerKey(db(), caches(), secrets[2]))?.scopes).toEqual(['cities:read']);
  });

  it('issues platform backend keys with scopes, and revokes them', async () => {
    const key = await partnerKey({ name: 'platform', scopes: ['countries:read', 'cities:read', 'cities:read'] });
    expect(key.key).toMatch(/^pis_bk_[\w-]{43}$/);
    expect(key.scopes).toEqual(['countries:read', 'cities:read']);
    expect(await resolveBackendPartnerKey(db(), caches(), key.key)).toEqual({
      keyId: key.id,
      tenantId: null,
      scopes: ['countries:read', 'cities:read'],
    });
    expect((await service.admin('DELETE', `/partner-keys/${key.id}`)).statusCode).toBe(200);
    expect(await resolveBackendPartnerKey(db(), caches(), key.key)).toBeNull();
    // A partner key is not a tenant credential, and the other way round.
    expect((await service.admin('DELETE', `/credentials/${key.id}`)).statusCode).toBe(404);
  });

  it('records when each credential was last used, at most once a minute, without the caller waiting', async () => {
    const tenant = await service.createTenant();
    const lastUse = async () =>
      (await service.admin('GET', `/tenants/${tenant.tenant.id}/credentials`))
        .json()
        .credentials.map((credential: { kind: string; last_used_at: string | null }) => [
          credential.kind,
          credential.last_used_at,
        ]);
    expect((await lastUse()).every(([, at]: [string, string | null]) => at === null)).toBe(true);
    const before = Date.now();
    await resolveSsoSecret(db(), caches(), tenant.credentials.sso_hmac_secret);
    const recorded = await waitFor('the recorded use', async () => {
      const used = (await lastUse()).find(([kind]: [string]) => kind === 'sso_hmac_secret')[1];
      return used ?? undefined;
    });
    expect(Date.parse(recorded)).toBeGreaterThanOrEqual(before - 1000);
    expect((await lastUse()).find(([kind]: [string]) => kind === 'partner_api_key')[1]).toBeNull();
    // Used again within the minute: not written again. Seen through a use just past the minute,
    // which is written: had the use within the minute been written, this one would be too soon.
    const firstUse = Date.parse(recorded);
    const pastTheMinute = firstUse + A_MINUTE_MS + 1000;
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(firstUse + A_MINUTE_MS / 2);
      await resolveSsoSecret(db(), caches(), tenant.credentials.sso_hmac_secret);
      vi.setSystemTime(pastTheMinute);
      await resolveSsoSecret(db(), caches(), tenant.credentials.sso_hmac_secret);
    } finally {
      vi.useRealTimers();
    }
    const rewritten = await waitFor('the use past the minute', async () => {
      const used = (await lastUse()).find(([kind]: [string]) => kind === 'sso_hmac_secret')[1];
      return used !== recorded && used;
    });
    expect(Date.parse(rewritten)).toBe(pastTheMinute);
  });

  it('stores no issued secret in clear anywhere in the database', async () => {
    const tenant = await service.createTenant();
    const rotated = (
      await service.admin('POST', `/tenants/${tenant.tenant.id}/credentials`, { kind: 'payment_endpoint_secret' })
    ).json();
    const key = await partnerKey({ name: 'leak check', scopes: ['countries:read'] });
    const secrets = [...Object.values(tenant.credentials), rotated.secret, key.key];
    // The random part of each secret, without its readable prefix, is what must not appear.
    const needles = secrets.map((secret) => secret.slice(secret.indexOf('_', 4) + 1));

    const tables = await service.context.database.executeSql(
      `select table_schema, table_name from information_schema.tables
       where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')`,
    );
    expect(tables.rows.length).toBeGreaterThan(5);
    for (const { table_schema, table_name } of tables.rows) {
      for (const needle of needles) {
        const { rows } = await service.context.database.executeSql(
          `select count(*)::int as n from "${table_schema}"."${table_name}" t where strpos(t::text, $1) > 0`,
          [needle],
        );
        expect(rows[0].n, `${table_schema}.${table_name}`).toBe(0);
      }
    }
  });
});

describe('admin API', () => {
  it('refuses requests without the bearer token, or with another', async () => {
    for (const authorization of [undefined, 'Bearer wrong', 'Basic dGVzdA==', TEST_ADMIN_TOKEN]) {
      const response = await service.apps.admin!.inject({
        method: 'GET',
        url: '/admin/v1/tenants',
        headers: authorization ? { authorization } : {},
      });
      expect(response.statusCode).toBe(401);
      expect(response.json()).toEqual({ error: { code: 'UNAUTHORIZED', message: 'Unauthorized.' } });
    }
  });

  it.each([
    [{ name: 'A', slug: 'Bad Slug', gateway: 'tap' }, 'slug'],
    [{ name: 'A', slug: 'ok-slug', gateway: 'paypal' }, 'gateway'],
    [{ name: '', slug: 'ok-slug', gateway: 'tap' }, 'name'],
    [{ slug: 'ok-slug', gateway: 'tap' }, 'name'],
    [{ name: 'A', slug: 'ok-slug', gateway: 'tap', colour: 'red' }, 'colour'],
    [{ name: 'A', slug: 'ok-slug', gateway: 'tap', payment_endpoint_url: 'ftp://x' }, 'payment_endpoint_url'],
    [{ name: 'A', slug: 'ok-slug', gateway: 'tap', payment_endpoint_url: 'not a url' }, 'payment_endpoint_url'],
  ])('answers 400 naming the field for %o', async (body, field) => {
    const response = await service.admin('POST', '/tenants', body);
    expect(response.statusCode).toBe(400);
    const { error } = response.json();
    expect(error.code).toBe('VALIDATION_ERROR');
    expect(error.details[0].field).toBe(field);
    expect(error.message).toContain(field);
  });

  it('answers 409 for a duplicate slug, 404 for unknown ids, 400 for malformed ids and unknown scopes', async () => {
    const tenant = await service.createTenant();
    const duplicate = await service.admin('POST', '/tenants', {
      name: 'Again',
      slug: tenant.tenant.slug,
      gateway: 'tap',
    });
    expect(duplicate.statusCode).toBe(409);
    expect(duplicate.json().error.code).toBe('CONFLICT');

    const unknown = '00000000-0000-4000-8000-000000000000';
    expect((await service.admin('GET', `/tenants/${unknown}`)).statusCode).toBe(404);
    expect((await service.admin('PATCH', `/tenants/${unknown}`, { name: 'x' })).statusCode).toBe(404);
    expect((await service.admin('DELETE', `/credentials/${unknown}`)).statusCode).toBe(404);
    expect(
      (await service.admin('POST', `/tenants/${unknown}/credentials`, { kind: 'sso_hmac_secret' })).statusCode,
    ).toBe(404);
    expect((await service.admin('GET', '/tenants/not-a-uuid')).statusCode).toBe(400);
    const scope = await service.admin('POST', '/partner-keys', { name: 'x', scopes: ['prompts:write'] });
    expect(scope.statusCode).toBe(400);
    expect(scope.json().error.details[0].field).toMatch(/^scopes/);
    // A value of a fixed list: the answer lists them.
    const kind = await service.admin('POST', `/tenants/${tenant.tenant.id}/credentials`, { kind: 'nope' });
    expect(kind.statusCode).toBe(400);
    expect(kind.json().error.details).toEqual([
      expect.objectContaining({ field: 'kind', message: expect.stringMatching(/^must be one of sso_hmac_secret, /) }),
    ]);
  });

  it('answers a body that is not JSON with 400 INVALID_JSON', async () => {
    const response = await service.apps.admin!.inject({
      method: 'POST',
      url: '/admin/v1/tenants',
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
      payload: '{"name": ',
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe('INVALID_JSON');
  });
});
