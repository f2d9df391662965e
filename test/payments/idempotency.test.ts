// `Idempotency-Key` on invoice creation: a retried call makes one invoice and one payment request.
import { describe, expect, it } from 'vitest';
import { useTenant } from '../support/apps.js';
import { TEST_ADMIN_TOKEN } from '../support/env.js';
import { useService } from '../support/service.js';

describe('idempotent invoice creation', () => {
  const service = useService({ env: { PAYMENT_WORKER: 'false' } });
  const tenant = useTenant(service, { payment_endpoint_url: 'http://127.0.0.1:1/requests' });

  const create = (key: string | undefined, body: Record<string, unknown>) =>
    service.apps.admin!.inject({
      method: 'POST',
      url: '/admin/v1/invoices',
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, ...(key !== undefined && { 'idempotency-key': key }) },
      payload: { tenant_id: tenant.tenant.id, currency: 'SAR', ...body },
    });

  const queuedRequests = async (invoiceId: string) => {
    const { rows } = await service.context.database.executeSql(
      'select count(*)::int as n from payment_requests where invoice_id = $1',
      [invoiceId],
    );
    return rows[0].n;
  };

  it('answers the first invoice to a repeat of the same body, and enqueues one payment request', async () => {
    const first = await create('order-1001', { amount: '100.00' });
    expect(first.statusCode).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const again = await create('order-1001', { amount: '100' });
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json().invoice).toEqual(first.json().invoice);
    expect(await queuedRequests(first.json().invoice.id)).toBe(1);
  });

  it('refuses the same key with another body (409), and makes two invoices without a key', async () => {
    await create('order-1002', { amount: '100.00' });
    const other = await create('order-1002', { amount: '120.00' });
    expect(other.statusCode).toBe(409);
    expect(other.json().error).toMatchObject({ code: 'CONFLICT', message: expect.stringMatching(/different body/) });

    const a = (await create(undefined, { amount: '5.00' })).json().invoice;
    const b = (await create(undefined, { amount: '5.00' })).json().invoice;
    expect(a.id).not.toBe(b.id);
  });

  it('honours a key for 24 hours only', async () => {
    const first = (await create('order-1003', { amount: '7.00' })).json().invoice;
    await service.context.database.executeSql(
      `update invoice_idempotency_keys set created_at = now() - interval '25 hours' where key = 'order-1003'`,
    );
    const later = await create('order-1003', { amount: '8.00' });
    expect(later.statusCode).toBe(201);
    expect(later.json().invoice.id).not.toBe(first.id);
  });

  it('answers requests racing with one key as the first: one invoice, one payment request', async () => {
    const racing = await Promise.all(Array.from({ length: 6 }, () => create('order-1004', { amount: '9.00' })));
    expect(racing.map((response) => response.statusCode)).toEqual(Array(6).fill(201));
    const ids = new Set(racing.map((response) => response.json().invoice.id));
    expect(ids.size).toBe(1);
    expect(racing.filter((response) => response.headers['idempotent-replayed'] === 'true')).toHaveLength(5);
    expect(await queuedRequests([...ids][0])).toBe(1);
  });

  it('refuses a malformed key with a 400 naming the header', async () => {
    const response = await create('has space', { amount: '1.00' });
    expect(response.statusCode).toBe(400);
    expect(response.json().error.details).toEqual([
      expect.objectContaining({ field: 'idempotency-key', location: 'header' }),
    ]);
  });
});
