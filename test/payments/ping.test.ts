// Pinging a tenant's payment endpoint: signed like a payment request, answered synchronously,
// recorded with the tenant; `partnerctl tenants ping` reports it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_ADMIN_TOKEN } from '../support/env.js';
import { PartnerEndpoint } from '../support/partner-endpoint.js';
import { partnerctl } from '../support/process.js';
import { useService } from '../support/service.js';

describe('payment endpoint ping', () => {
  const service = useService();
  const partner = new PartnerEndpoint();

  beforeAll(() => partner.start());
  afterAll(() => partner.stop());

  async function tenantAnswering(path: string, status: number) {
    const tenant = await service.createTenant();
    const url = partner.route(path, [tenant.credentials.payment_endpoint_secret], [{ status }]);
    await service.admin('PATCH', `/tenants/${tenant.tenant.id}`, { payment_endpoint_url: url });
    return tenant;
  }

  it('sends a signed ping event and answers the outcome; the tenant shows it', async () => {
    const tenant = await tenantAnswering('/ok', 200);
    const response = await service.admin('POST', `/tenants/${tenant.tenant.id}/payment-endpoint/ping`);
    expect(response.statusCode).toBe(200);
    const { ping } = response.json();
    expect(ping).toMatchObject({ ok: true, http_status: 200, error: null, endpoint_url: `${partner.url}/ok` });
    expect(ping.latency_ms).toBeGreaterThanOrEqual(0);

    const [received] = partner.received.get('/ok')!;
    expect(received.verifiedWith).toEqual([true]);
    expect(received.headers['webhook-id']).toBe(ping.webhook_id);
    expect(received.body).toEqual({ type: 'ping', tenant_id: tenant.tenant.id, created_at: expect.any(String) });

    const shown = (await service.admin('GET', `/tenants/${tenant.tenant.id}`)).json();
    expect(shown.last_ping).toEqual(ping);
  });

  it('reports a 500 as such, and partnerctl exits 1 on it', async () => {
    const tenant = await tenantAnswering('/broken', 500);
    const response = await service.admin('POST', `/tenants/${tenant.tenant.id}/payment-endpoint/ping`);
    expect(response.statusCode).toBe(200);
    expect(response.json().ping).toMatchObject({ ok: false, http_status: 500, error: 'endpoint answered HTTP 500' });
    expect(partner.received.get('/broken')![0].verifiedWith).toEqual([true]);

    const run = await partnerctl(['tenants', 'ping', tenant.tenant.id, '--json'], {
      ADMIN_URL: service.urls.admin!,
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    });
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout).ping).toMatchObject({ ok: false, http_status: 500 });
  });

  it('reports an unreachable endpoint, and refuses a tenant without one (409)', async () => {
    const tenant = await service.createTenant({ payment_endpoint_url: 'http://127.0.0.1:1/nothing' });
    const response = await service.admin('POST', `/tenants/${tenant.tenant.id}/payment-endpoint/ping`);
    expect(response.json().ping).toMatchObject({
      ok: false,
      http_status: null,
      error: expect.stringContaining('ECONNREFUSED'),
    });

    const without = await service.createTenant();
    const refused = await service.admin('POST', `/tenants/${without.tenant.id}/payment-endpoint/ping`);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error.message).toMatch(/no payment endpoint/);
    expect((await service.admin('GET', `/tenants/${without.tenant.id}`)).json().last_ping).toBeNull();
  });
});
