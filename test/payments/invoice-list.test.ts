// The admin invoice list (DECISIONS §11): paged, newest first, both modes unless asked, filtered by
// tenant, status, mode, time and the double-charge flag, a 400 for a bad filter; and
// `partnerctl invoices list`, with the JSON convention every partnerctl command follows.
import { beforeAll, describe, expect, it } from 'vitest';
import { useApps, useTenant } from '../support/apps.js';
import { TEST_ADMIN_TOKEN } from '../support/env.js';
import { partnerctl } from '../support/process.js';
import { createInvoice, type InvoiceJson, keyOf, notificationFor, notify } from './support.js';

const service = useApps(['admin', 'integrations'], { listen: true });
const tenant = useTenant(service, { gateway: 'tap' });
const other = useTenant(service, { gateway: 'tap' });

interface InvoicePage {
  count: number;
  next: string | null;
  previous: string | null;
  results: InvoiceJson[];
}

async function list(query: string): Promise<InvoicePage> {
  const response = await service.admin('GET', `/invoices?${query}`);
  expect(response.statusCode, response.body).toBe(200);
  return response.json<InvoicePage>();
}

/** The admin path of a `next`/`previous` link (the list's links are absolute). */
const adminPath = (link: string) => {
  const url = new URL(link);
  return `${url.pathname.replace(/^\/admin\/v1/, '')}${url.search}`;
};

async function createTestInvoice(sso: string, amount: string): Promise<string> {
  const created = await service.apps.integrations!.inject({
    method: 'POST',
    url: '/api/v1/test/invoices/',
    headers: { authorization: `Api-Key ${sso}` },
    payload: { amount, currency: 'SAR' },
  });
  expect(created.statusCode, created.body).toBe(201);
  return created.json().data.payment_request.invoice_id;
}

const byNewest = (a: InvoiceJson, b: InvoiceJson) =>
  b.created_at.localeCompare(a.created_at) || b.id.localeCompare(a.id);

describe('GET /admin/v1/invoices', () => {
  let live: InvoiceJson[];
  let testIds: string[];
  let paid: InvoiceJson;
  let flagged: InvoiceJson;

  beforeAll(async () => {
    live = [];
    for (const amount of ['10.00', '20.00', '30.00']) live.push(await createInvoice(service, tenant, { amount }));
    [, paid, flagged] = live;
    await notify(service, notificationFor(paid), keyOf(tenant));
    await notify(service, notificationFor(flagged), keyOf(tenant));
    // A second `paid` under another transaction: flagged, not applied.
    await notify(service, notificationFor(flagged), keyOf(tenant));
    const testSso = (
      await service.admin('POST', `/tenants/${tenant.tenant.id}/credentials`, { kind: 'test_sso_hmac_secret' })
    ).json().secret;
    testIds = [await createTestInvoice(testSso, '1.00'), await createTestInvoice(testSso, '2.00')];
    await createInvoice(service, other, { amount: '99.00' });
  });

  it("pages one tenant's invoices of both modes newest first, the links keeping the filter", async () => {
    const first = await list(`tenant_id=${tenant.tenant.id}&limit=2`);
    expect(first.count).toBe(5);
    expect(first.previous).toBeNull();
    expect(first.next).toBe(`${service.urls.admin}/admin/v1/invoices?tenant_id=${tenant.tenant.id}&limit=2&offset=2`);
    const seen = [...first.results];
    let link = first.next;
    while (link) {
      const page = (await service.admin('GET', adminPath(link))).json<InvoicePage>();
      expect(page.count).toBe(5);
      expect(page.previous).not.toBeNull();
      seen.push(...page.results);
      link = page.next;
    }
    expect(seen).toHaveLength(5);
    expect(seen).toEqual([...seen].sort(byNewest));
    expect(new Set(seen.map((invoice) => invoice.tenant_id))).toEqual(new Set([tenant.tenant.id]));
    expect(seen.map((invoice) => invoice.mode).sort()).toEqual(['live', 'live', 'live', 'test', 'test']);
    expect(seen.map((invoice) => invoice.id).sort()).toEqual([...live.map((i) => i.id), ...testIds].sort());
    // Newest first: the last test invoice made is the first row.
    expect(seen[0].id).toBe(testIds[1]);
    // The invoice object of the detail, as is.
    const shown = (await service.admin('GET', `/invoices/${flagged.id}`)).json().invoice;
    expect(seen.find((invoice) => invoice.id === flagged.id)).toEqual(shown);
  });

  it('lists every tenant without tenant_id, and each filter narrows it', async () => {
    const all = await list('limit=100');
    expect(all.count).toBe(6);
    expect(all.results.map((invoice) => invoice.tenant_id)).toContain(other.tenant.id);

    const ids = (page: InvoicePage) => page.results.map((invoice) => invoice.id).sort();
    const mine = `tenant_id=${tenant.tenant.id}`;
    expect(ids(await list(`${mine}&mode=test`))).toEqual([...testIds].sort());
    expect((await list(`${mine}&mode=live`)).count).toBe(3);
    expect(ids(await list(`${mine}&status=paid`))).toEqual([paid.id, flagged.id].sort());
    expect((await list(`${mine}&status=pending`)).count).toBe(3);
    expect(ids(await list('possible_double_charge=true'))).toEqual([flagged.id]);
    expect((await list(`${mine}&possible_double_charge=false`)).count).toBe(4);
    // `since`: created at or after that instant.
    const since = await list(`${mine}&since=${encodeURIComponent(flagged.created_at)}`);
    expect(ids(since)).toEqual([flagged.id, ...testIds].sort());
    expect(since.results.every((invoice) => invoice.created_at >= flagged.created_at)).toBe(true);
    expect((await list(`${mine}&since=0001-01-01T00:00:00Z`)).count).toBe(5);
    // Filters combine.
    expect(ids(await list(`${mine}&mode=live&status=paid&possible_double_charge=true`))).toEqual([flagged.id]);
    expect((await list(`tenant_id=${other.tenant.id}&mode=test`)).count).toBe(0);
  });

  it.each([
    ['an unknown status', 'status=open', 'status'],
    ['an unknown mode', 'mode=sandbox', 'mode'],
    ['a tenant id that is no UUID', 'tenant_id=acme', 'tenant_id'],
    ['a time that is no date-time', 'since=yesterday', 'since'],
    // Valid RFC 3339 times in year 0, which the database cannot hold.
    ['a time in year 0', 'since=0000-06-01T00:00:00Z', 'since'],
    ['a time in year 1 that is year 0 in UTC', 'since=0001-01-01T00:00:00%2B14:00', 'since'],
    ['a flag that is no boolean', 'possible_double_charge=maybe', 'possible_double_charge'],
    ['a repeated status', 'status=paid&status=failed', 'status'],
    ['a limit of 0', 'limit=0', 'limit'],
    ['a negative offset', 'offset=-1', 'offset'],
  ])('answers 400 VALIDATION_ERROR for %s', async (_case, query, field) => {
    const response = await service.admin('GET', `/invoices?${query}`);
    expect(response.statusCode, response.body).toBe(400);
    expect(response.json().error.code).toBe('VALIDATION_ERROR');
    expect(JSON.stringify(response.json().error)).toContain(field);
  });

  it('answers 401 without a token', async () => {
    const response = await service.apps.admin!.inject({ method: 'GET', url: '/admin/v1/invoices' });
    expect(response.statusCode).toBe(401);
  });
});

// Each command is a process of its own: a few seconds each on a busy machine.
describe('partnerctl invoices list', { timeout: 120_000 }, () => {
  const env = () => ({ ADMIN_URL: service.urls.admin!, ADMIN_TOKEN: TEST_ADMIN_TOKEN });

  it('prints a table by default and the API answer with --json, filters as options', async () => {
    const made = await createInvoice(service, other, { amount: '42.00' });
    const table = await partnerctl(['invoices', 'list', '--tenant', other.tenant.id], env());
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(
      /^CREATED_AT\s+ID\s+TENANT_ID\s+MODE\s+AMOUNT\s+CURRENCY\s+STATUS\s+POSSIBLE_DOUBLE_CHARGE$/,
    );
    expect(lines[1]).toContain(made.id);
    expect(lines[1]).toContain('42.00');
    expect(lines.at(-1)).toMatch(/^\d+ of \d+$/);

    const json = await partnerctl(
      ['invoices', 'list', '--tenant', other.tenant.id, '--mode', 'live', '--limit', '1', '--json'],
      env(),
    );
    expect(json.code, json.stderr).toBe(0);
    const printed = JSON.parse(json.stdout);
    expect(printed).toEqual(await list(`tenant_id=${other.tenant.id}&mode=live&limit=1`));
    expect(printed.results[0].id).toBe(made.id);

    const flagged = await partnerctl(['invoices', 'list', '--possible-double-charge', '--json'], env());
    expect(JSON.parse(flagged.stdout).results.every((i: InvoiceJson) => i.possible_double_charge)).toBe(true);
  });

  it("exits 1 with the API's 400 for a bad filter, and refuses a --limit that is no whole number", async () => {
    const refused = await partnerctl(['invoices', 'list', '--status', 'open'], env());
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^partnerctl: 400 VALIDATION_ERROR/);
    expect(refused.stderr).toContain('status');
    const badLimit = await partnerctl(['invoices', 'list', '--limit', 'ten'], env());
    expect(badLimit.code).not.toBe(0);
    expect(badLimit.stderr).toContain('--limit must be a whole number');
  });

  it('names a new credential as credentials revoke names it', async () => {
    const issued = await partnerctl(
      ['credentials', 'issue', other.tenant.id, '--kind', 'sso_hmac_secret', '--json'],
      env(),
    );
    expect(issued.code, issued.stderr).toBe(0);
    const { credential } = JSON.parse(issued.stdout);
    expect(credential).toMatchObject({ kind: 'sso_hmac_secret', secret: expect.stringMatching(/^pis_sso_/) });
    const revoked = await partnerctl(['credentials', 'revoke', credential.id, '--json'], env());
    expect(JSON.parse(revoked.stdout).credential.id).toBe(credential.id);
  });

  it('names a new partner key as partner-keys revoke names it, and a new tenant beside its secrets', async () => {
    const created = await partnerctl(
      ['partner-keys', 'create', '--name', 'List test', '--scope', 'countries:read', '--json'],
      env(),
    );
    expect(created.code, created.stderr).toBe(0);
    const { partner_key } = JSON.parse(created.stdout);
    expect(partner_key).toMatchObject({ scopes: ['countries:read'], key: expect.any(String) });
    const keyRevoked = await partnerctl(['partner-keys', 'revoke', partner_key.id, '--json'], env());
    expect(JSON.parse(keyRevoked.stdout).partner_key.id).toBe(partner_key.id);

    const tenantMade = await partnerctl(
      ['tenants', 'create', '--name', 'Json Travel', '--slug', `json-${Date.now()}`, '--gateway', 'tap', '--json'],
      env(),
    );
    expect(Object.keys(JSON.parse(tenantMade.stdout))).toEqual(['tenant', 'credentials']);
  });
});
