// GET /metrics on the admin listener: Prometheus text, parsed strictly; the counters move by
// exactly the requests the test makes; labels hold route templates, never URLs or ids.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { Metrics } from '../../src/metrics.js';
import { createInvoice, keyOf, notificationFor, notify, showInvoice } from '../payments/support.js';
import { useTenant } from '../support/apps.js';
import { waitFor } from '../support/partner-endpoint.js';
import { parsePrometheus, type Scrape } from '../support/prometheus.js';
import { useService } from '../support/service.js';

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

describe('metrics', () => {
  const service = useService();
  const tenant = useTenant(service);

  async function scrape(): Promise<Scrape> {
    const response = await service.apps.admin!.inject({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    return parsePrometheus(response.body);
  }

  it('is served without a token, with Node process metrics, and no label carries an id or a URL', async () => {
    await service.apps.integrations!.inject({
      method: 'GET',
      url: `/api/v1/trips/${randomUUID()}/`,
      headers: { authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}` },
    });
    const metrics = await scrape();
    expect(metrics.types.get('process_cpu_user_seconds_total')).toBe('counter');
    expect(metrics.types.get('nodejs_heap_size_used_bytes')).toBe('gauge');
    expect(metrics.types.get('http_request_duration_seconds')).toBe('histogram');
    for (const sample of metrics.samples) {
      for (const value of Object.values(sample.labels)) {
        expect(value).not.toMatch(UUID);
        expect(value).not.toMatch(/\?|pis_/);
      }
    }
  });

  it('counts requests by listener, route template, method and status, by exactly what was sent', async () => {
    const labels = { listener: 'integrations', route: '/api/v1/trips/:id/', method: 'GET', status: '404' };
    const before = (await scrape()).value('http_request_duration_seconds_count', labels);
    for (let i = 0; i < 3; i++) {
      const response = await service.apps.integrations!.inject({
        method: 'GET',
        url: `/api/v1/trips/${randomUUID()}/`,
        headers: { authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}` },
      });
      expect(response.statusCode).toBe(404);
    }
    const after = await scrape();
    expect(after.value('http_request_duration_seconds_count', labels) - before).toBe(3);
    expect(after.value('http_request_duration_seconds_bucket', { ...labels, le: '+Inf' }) - before).toBe(3);
  });

  it('counts payment notifications by outcome: success, duplicate and each error message', async () => {
    const invoice = await createInvoice(service, tenant);
    const before = await scrape();
    const notification = notificationFor(invoice);
    expect((await notify(service, notification, keyOf(tenant))).json()).toEqual({ status: 'success' });
    expect((await notify(service, notification, keyOf(tenant))).json()).toEqual({ status: 'duplicate' });
    await notify(service, notificationFor(invoice, { amount: '1.00' }), keyOf(tenant));
    await notify(service, notificationFor(invoice, { amount: '1.00' }), keyOf(tenant));
    await notify(service, notification, {});
    await notify(service, '{not json', keyOf(tenant));
    const after = await scrape();
    const delta = (outcome: string) =>
      after.value('payment_notifications_total', { outcome }) -
      before.value('payment_notifications_total', { outcome });
    expect(delta('success')).toBe(1);
    expect(delta('duplicate')).toBe(1);
    expect(delta('Amount mismatch')).toBe(2);
    expect(delta('Missing API key')).toBe(1);
    expect(delta('Invalid JSON body')).toBe(1);
  });

  it('counts payment request attempts by outcome, and shows what is waiting', async () => {
    const partner = createServer((_request, response) => response.writeHead(200).end('{}'));
    await new Promise<void>((resolve) => partner.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = partner.address() as AddressInfo;
      const withEndpoint = await service.createTenant({ payment_endpoint_url: `http://127.0.0.1:${port}/requests` });
      const before = (await scrape()).value('payment_request_attempts_total', { outcome: 'delivered' });
      const invoice = await createInvoice(service, withEndpoint);
      await waitFor('the delivery', async () => (await showInvoice(service, invoice.id)).deliveries.length === 1);
      const metrics = await scrape();
      expect(metrics.value('payment_request_attempts_total', { outcome: 'delivered' }) - before).toBe(1);
      expect(metrics.types.get('payment_requests_waiting')).toBe('gauge');
      for (const mode of ['live', 'test']) {
        expect(metrics.value('payment_requests_waiting', { mode })).toBe(0);
        expect(metrics.value('payment_requests_oldest_waiting_seconds', { mode })).toBe(0);
      }
    } finally {
      partner.close();
    }
  });

  it('shows cache hits and misses per cache, and the database pool', async () => {
    const headers = { authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}` };
    const before = await scrape();
    for (let i = 0; i < 2; i++) {
      await service.apps.integrations!.inject({ method: 'GET', url: `/api/v1/trips/${randomUUID()}/`, headers });
    }
    const after = await scrape();
    const looked = (result: string) =>
      after.value('cache_requests_total', { cache: 'tenant_credentials', result }) -
      before.value('cache_requests_total', { cache: 'tenant_credentials', result });
    expect(looked('hit') + looked('miss')).toBe(2);
    expect(after.value('db_pool_connections', { state: 'size' })).toBeGreaterThanOrEqual(1);
    expect(after.value('db_pool_connections', { state: 'in_use' })).toBeGreaterThanOrEqual(0);
    expect(after.value('db_pool_connections', { state: 'waiting' })).toBe(0);
  });
});

describe('metrics while the database cannot answer', () => {
  it('are still served, service_ready 0, without the gauges read from the database', async () => {
    const unavailable = () => Promise.reject(new Error('database unavailable'));
    const metrics = new Metrics({
      paymentBacklog: unavailable,
      openBreakers: unavailable,
      databasePool: () => ({ size: 10, inUse: 0, waiting: 0 }),
      databaseDeadlinesExceeded: () => 3,
      ready: async () => false,
      cacheStatistics: () => new Map(),
    });
    const scraped = parsePrometheus(await metrics.registry.metrics());
    expect(scraped.value('service_ready', {})).toBe(0);
    expect(scraped.value('db_request_deadline_exceeded_total', {})).toBe(3);
    const names = new Set(scraped.samples.map((sample) => sample.name));
    expect(names).toContain('service_ready');
    expect(names).not.toContain('payment_requests_waiting');
    expect(scraped.value('payment_endpoint_breakers_open', {})).toBeNaN();
  });
});
