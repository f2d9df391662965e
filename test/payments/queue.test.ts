// The payment request queue's take, as the database runs it, and its backlog per mode.
import { describe, expect, it } from 'vitest';
import { createInvoice } from '../../src/payments/index.js';
import type { Mode } from '../../src/tenants/index.js';
import { useTestContext } from '../support/apps.js';

describe('take_payment_requests', () => {
  const opened = useTestContext();

  it('commits to disk before its requests leave: its transaction ends with synchronous_commit on', async () => {
    // A take committed without waiting for the disk was lost in a database crash while its
    // requests were on their way, and they were taken and sent again after the restart.
    const setting = await opened.context.database.driverTransaction('read write', async (tx) => {
      await tx`select * from take_payment_requests('payment-request', 1, 8, 'test-worker', 86400, 120, 0)`;
      const [row] = await tx`select current_setting('synchronous_commit') as setting`;
      return row.setting;
    });
    expect(setting).toBe('on');
  });
});

describe('the payment request backlog', () => {
  const opened = useTestContext();

  it('is counted per invoice mode: test requests waiting are no live backlog', async () => {
    const { context } = opened;
    const { tenant } = await opened.createTenant({
      payment_endpoint_url: 'https://live.partner.example/requests',
      test_payment_endpoint_url: 'https://sandbox.partner.example/requests',
    });
    const invoice = (mode: Mode) =>
      createInvoice(context.db, context.paymentQueue, { tenant_id: tenant.id, amount: '10.00', currency: 'SAR', mode });
    expect(await context.paymentQueue.backlog()).toEqual({
      live: { waiting: 0, oldestAgeSeconds: 0 },
      test: { waiting: 0, oldestAgeSeconds: 0 },
    });
    for (const mode of ['test', 'test', 'live'] as const) await invoice(mode);
    const backlog = await context.paymentQueue.backlog();
    expect([backlog.live.waiting, backlog.test.waiting]).toEqual([1, 2]);
    expect(backlog.test.oldestAgeSeconds).toBeGreaterThanOrEqual(backlog.live.oldestAgeSeconds);
  });
});
