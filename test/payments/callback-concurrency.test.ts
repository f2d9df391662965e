// Races on the payment callback over real HTTP (DECISIONS §4). One instance, then two instances
// sharing one database: in the external PostgreSQL's run only, the embedded run's engine being the same.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { type RunningService, startService } from '../../src/server.js';
import { useTenant } from '../support/apps.js';
import { TEST_DATABASE_URL } from '../support/database.js';
import { testEnv } from '../support/env.js';
import { useService } from '../support/service.js';
import { CALLBACK_PATH, createInvoice, type InvoiceJson, keyOf, notificationFor, showInvoice } from './support.js';

describe.skipIf(!TEST_DATABASE_URL)('payment callback under concurrency (PostgreSQL)', () => {
  const service = useService();
  let second: RunningService;
  const tenant = useTenant(service, { gateway: 'tap' });

  beforeAll(async () => {
    second = await startService(loadConfig(testEnv(service.database.target)), createLogger('silent'));
  });
  afterAll(() => second?.close());

  const post = async (baseUrl: string, body: unknown) => {
    const response = await fetch(`${baseUrl}${CALLBACK_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...keyOf(tenant) },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: await response.json() };
  };

  async function expectExactlyOneSuccess(invoice: InvoiceJson, urls: string[]) {
    const body = notificationFor(invoice, { transaction_id: `race-${invoice.id}` });
    const answers = await Promise.all(Array.from({ length: 25 }, (_, i) => post(urls[i % urls.length], body)));
    expect(answers.filter((answer) => answer.status !== 200)).toEqual([]);
    expect(answers.filter((answer) => answer.body.status === 'success')).toHaveLength(1);
    expect(answers.filter((answer) => answer.body.status === 'duplicate')).toHaveLength(24);
    const shown = await showInvoice(service, invoice.id);
    expect(shown.events).toHaveLength(1);
    expect(shown.invoice.status).toBe('paid');
  }

  it('answers 25 identical notifications at once with one success, 24 duplicates and one event', async () => {
    await expectExactlyOneSuccess(await createInvoice(service, tenant), [service.urls.integrations!]);
  });

  it('does the same with two instances sharing the database', async () => {
    await expectExactlyOneSuccess(await createInvoice(service, tenant), [
      service.urls.integrations!,
      second.urls.integrations!,
    ]);
  });

  async function paidAndFailedAtOnce(urls: [string, string], order: ['paid', 'failed'] | ['failed', 'paid']) {
    for (let round = 0; round < 5; round++) {
      const invoice = await createInvoice(service, tenant);
      const answers = await Promise.all(
        order.map((status, i) =>
          post(urls[i], notificationFor(invoice, { status, transaction_id: `${status}-${invoice.id}` })),
        ),
      );
      expect(answers).toEqual([
        { status: 200, body: { status: 'success' } },
        { status: 200, body: { status: 'success' } },
      ]);
      const shown = await showInvoice(service, invoice.id);
      expect(shown.invoice.status).toBe('paid');
      expect(shown.invoice.gateway_reference).toBe(`paid-${invoice.id}`);
      expect(shown.events).toHaveLength(2);
      // Whichever came second saw the first's outcome: a late failure is stored, not applied.
      const failed = shown.events.find((event) => event.status === 'failed')!;
      expect(failed.applied).toBe(failed.status_before === 'pending');
    }
  }

  it.each([[['paid', 'failed'] as const], [['failed', 'paid'] as const]])(
    'ends paid when %j arrive at once, on one instance',
    async (order) => {
      await paidAndFailedAtOnce([service.urls.integrations!, service.urls.integrations!], [...order] as never);
    },
  );

  it.each([[['paid', 'failed'] as const], [['failed', 'paid'] as const]])(
    'ends paid when %j arrive at once, one on each instance',
    async (order) => {
      await paidAndFailedAtOnce([service.urls.integrations!, second.urls.integrations!], [...order] as never);
    },
  );
});
