// The typed client in clients/typescript/: its generated types match the documents the service
// serves now, it compiles on its own, and it works against a real service.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { backendClient, integrationsClient } from '../../clients/typescript/index.js';
import { GENERATED_DIR, generatedClientFiles } from '../../scripts/generate-client.js';
import { projectRoot } from '../../src/paths.js';
import { createTrip } from '../payments/support.js';
import { useTenant } from '../support/apps.js';
import { useService } from '../support/service.js';

describe('the typed client', () => {
  const service = useService();
  const tenant = useTenant(service);

  it('is generated from the current documents (run `npm run generate:client` when this fails)', async () => {
    const files = await generatedClientFiles();
    for (const [name, contents] of Object.entries(files)) {
      expect(
        readFileSync(path.join(GENERATED_DIR, name), 'utf8'),
        `clients/typescript/generated/${name} is stale`,
      ).toBe(contents);
    }
  });

  it('compiles on its own', async () => {
    const tsc = path.join(projectRoot, 'node_modules/typescript/bin/tsc');
    const run = promisify(execFile)(process.execPath, [tsc, '-p', 'clients/typescript/tsconfig.json'], {
      cwd: projectRoot,
    });
    await expect(run).resolves.toBeDefined();
  });

  it('lists cities, creates a prompt and reads a trip on the integrations host', async () => {
    const api = integrationsClient({
      baseUrl: service.urls.integrations!,
      ssoSecret: tenant.credentials.sso_hmac_secret,
    });

    const cities = await api.GET('/api/v1/cities/', { params: { query: { limit: 3 } } });
    expect(cities.response.status).toBe(200);
    expect(cities.data!.data.results).toHaveLength(3);
    expect(cities.data!.data.results[0].coordinates.coordinates).toHaveLength(2);

    const created = await api.POST('/api/v1/suggested-prompts/', {
      body: { language: 'en', text: 'Best souqs in Riyadh?' },
    });
    expect(created.response.status).toBe(201);
    expect(created.data!.data.prompt).toMatchObject({ text: 'Best souqs in Riyadh?', source: 'tenant' });

    const trip = await createTrip(service, tenant);
    const read = await api.GET('/api/v1/trips/{id}/', { params: { path: { id: trip.id } } });
    expect(read.data!.data.trip).toMatchObject({ id: trip.id, status: 'draft' });

    const missing = await api.GET('/api/v1/trips/{id}/', { params: { path: { id: crypto.randomUUID() } } });
    expect(missing.error!.error.code).toBe('NOT_FOUND');

    // The wrong credential: the error's typed `hint` says which one belongs here.
    const wrongKey = integrationsClient({
      baseUrl: service.urls.integrations!,
      ssoSecret: tenant.credentials.partner_api_key,
    });
    const refused = await wrongKey.GET('/api/v1/cities/', { params: { query: { limit: 1 } } });
    expect(refused.response.status).toBe(401);
    expect(refused.error!.error.hint).toMatch(/partner API key, for the payment callback only/);
  });

  it('creates a test invoice and reads its payment request and the callbacks log with test credentials', async () => {
    const testSso = (
      await service.admin('POST', `/tenants/${tenant.tenant.id}/credentials`, { kind: 'test_sso_hmac_secret' })
    ).json().secret;
    const api = integrationsClient({ baseUrl: service.urls.integrations!, ssoSecret: testSso });
    const created = await api.POST('/api/v1/test/invoices/', { body: { amount: '12.50', currency: 'SAR' } });
    expect(created.response.status).toBe(201);
    const invoiceId = created.data!.data.payment_request.invoice_id;
    const read = await api.GET('/api/v1/payment-requests/{invoice_id}/', {
      params: { path: { invoice_id: invoiceId } },
    });
    expect(read.data!.data.payment_request).toMatchObject({ invoice_id: invoiceId, mode: 'test', amount: '12.50' });
    const listed = await api.GET('/api/v1/payment-requests/', { params: { query: { status: 'pending', limit: 5 } } });
    expect(listed.data!.data.results.map((request) => request.invoice_id)).toContain(invoiceId);
    const log = await api.GET('/api/v1/payment-notifications/', { params: { query: { outcome: 'refused' } } });
    expect(log.data!.data.count).toBe(0);
    const live = integrationsClient({
      baseUrl: service.urls.integrations!,
      ssoSecret: tenant.credentials.sso_hmac_secret,
    });
    const refused = await live.POST('/api/v1/test/invoices/', { body: { amount: '1.00', currency: 'SAR' } });
    expect(refused.error!.error.code).toBe('TEST_MODE_ONLY');
  });

  it('reads countries on the backend host with a partner key', async () => {
    const issued = await service.admin('POST', '/partner-keys', { name: 'client test', scopes: ['countries:read'] });
    const api = backendClient({ baseUrl: service.urls.backend!, apiKey: issued.json().key });
    const countries = await api.GET('/v1/countries/', { params: { query: { limit: 2 } } });
    expect(countries.data!.results).toHaveLength(2);
    expect(countries.data!.count).toBeGreaterThan(200);
  });
});
