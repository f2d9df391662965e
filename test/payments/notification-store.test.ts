// Group commit of payment notifications (src/payments/notification-store.ts): notifications that
// arrive together are stored by one statement, and each is answered as it would be alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallbackResult } from '../../src/payments/index.js';
import { NotificationStore, processNotification } from '../../src/payments/index.js';
import type { TenantRow } from '../../src/tenants/index.js';
import { startTestApps, type TestApps, type TestTenant } from '../support/apps.js';
import { createInvoice, createTrip, type InvoiceJson, notificationFor, showInvoice, tripStatus } from './support.js';

let service: TestApps;
let tenant: TestTenant;
beforeAll(async () => {
  service = await startTestApps(['admin']);
  tenant = await service.createTenant({ gateway: 'tap' });
});
afterAll(() => service?.stop());

/** A store on the test database that records the statements it sends. */
function recordingStore(): { store: NotificationStore; statements: string[] } {
  const statements: string[] = [];
  const store = new NotificationStore({
    poolStatistics: () => service.context.database.poolStatistics(),
    query: (text, values) => {
      statements.push(text);
      return service.context.database.query(text, values);
    },
  });
  return { store, statements };
}

/** processNotification as the callback route calls it, the body sent as JSON text `payloadJson`. */
function receive(store: NotificationStore, body: Record<string, unknown>, payloadJson = JSON.stringify(body)) {
  return processNotification(store, {
    tenant: tenant.tenant as unknown as TenantRow,
    body,
    payloadJson,
    requestId: `req-${Math.random()}`,
  });
}

const SUCCESS: CallbackResult = { accepted: 'success' };

describe('notifications received together', () => {
  it('are stored by one statement, each answered and applied as it would be alone', async () => {
    const trip = await createTrip(service, tenant);
    const paid = await createInvoice(service, tenant, { trip_id: trip.id });
    const failed = await createInvoice(service, tenant);
    const refused = await createInvoice(service, tenant);
    const paidNotification = notificationFor(paid, { transaction_id: `together-${paid.id}` });
    const { store, statements } = recordingStore();

    const answers = await Promise.all([
      receive(store, paidNotification),
      receive(store, paidNotification),
      receive(store, notificationFor(failed, { status: 'failed' })),
      receive(store, notificationFor(refused, { amount: '99.99' })),
      receive(store, notificationFor({ ...refused, id: '00000000-0000-4000-8000-00000000dead' } as InvoiceJson)),
    ]);

    expect(answers).toEqual([
      SUCCESS,
      { accepted: 'duplicate' },
      SUCCESS,
      { rejected: { reason: 'amount_mismatch' } },
      { rejected: { reason: 'invoice_not_found' } },
    ]);
    expect(statements).toHaveLength(1);
    expect(statements[0]).toContain('receive_payment_notifications(');
    const shownPaid = await showInvoice(service, paid.id);
    expect(shownPaid.invoice.status).toBe('paid');
    expect(shownPaid.events).toHaveLength(1);
    expect(await tripStatus(service, trip.id)).toBe('booked');
    expect((await showInvoice(service, failed.id)).invoice.status).toBe('failed');
    expect((await showInvoice(service, refused.id)).events).toEqual([]);
  });

  it('are answered one by one when one of them fails the shared statement, the others stored', async () => {
    const invoices = await Promise.all([1, 2, 3].map(() => createInvoice(service, tenant)));
    const [first, unstorable, last] = invoices.map((invoice) => notificationFor(invoice));
    const { store, statements } = recordingStore();

    const answers = await Promise.all([
      receive(store, first),
      // A number PostgreSQL's jsonb cannot hold fails the whole statement, whoever sent it.
      receive(store, unstorable, JSON.stringify({ ...unstorable, extra: '§' }).replace('"§"', '1e999999')),
      receive(store, last),
    ]);

    expect(answers).toEqual([SUCCESS, { rejected: { reason: 'invalid_json' } }, SUCCESS]);
    expect(statements[0]).toContain('receive_payment_notifications(');
    const events = await Promise.all(invoices.map(async (invoice) => (await showInvoice(service, invoice.id)).events));
    expect(events.map((stored) => stored.length)).toEqual([1, 0, 1]);
  });

  it('is sent alone when it arrives alone', async () => {
    const { store, statements } = recordingStore();
    expect(await receive(store, notificationFor(await createInvoice(service, tenant)))).toEqual(SUCCESS);
    expect(statements).toHaveLength(1);
    expect(statements[0]).toContain('receive_payment_notification(');
  });
});
