// A second payment is flagged, not applied (DECISIONS §11): a `paid` for an invoice already paid
// under another transaction_id is stored and answered success, but leaves the first payment's
// gateway_reference and paid_at; its event says why, the invoice carries possible_double_charge,
// the partner's log and a counter say it. The decision is made under the invoice's row lock
// (store_payment_notifications), so two such `paid`s at once end with one applied and one flagged.
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { type CallbackResult, NotificationStore } from '../../src/payments/index.js';
import { apiAs, expectOk } from '../http/integrations/api.js';
import { useApps, useTenant } from '../support/apps.js';
import { waitFor } from '../support/partner-endpoint.js';
import { parsePrometheus } from '../support/prometheus.js';
import {
  createInvoice,
  createTrip,
  type InvoiceJson,
  keyOf,
  notificationFor,
  notify,
  receiveNotification,
  showInvoice,
  tripStatus,
} from './support.js';

const service = useApps(['integrations', 'admin']);
const tenant = useTenant(service, { gateway: 'tap' });

const send = async (body: Record<string, unknown>) => {
  const response = await notify(service, body, keyOf(tenant));
  return { status: response.statusCode, body: response.json() };
};
const SUCCESS = { status: 200, body: { status: 'success' } };

const doubleCharges = async () =>
  parsePrometheus((await service.apps.admin!.inject({ method: 'GET', url: '/metrics' })).body).value(
    'payment_notifications_possible_double_charge_total',
    { mode: 'live' },
  );

describe('a second paid under another transaction_id', () => {
  it('is stored and answered success, not applied: the first payment stays, the invoice is flagged', async () => {
    const trip = await createTrip(service, tenant);
    const invoice = await createInvoice(service, tenant, { trip_id: trip.id });
    const first = notificationFor(invoice, { transaction_id: `first-${invoice.id}` });
    expect(await send(first)).toEqual(SUCCESS);
    const paid = (await showInvoice(service, invoice.id)).invoice;
    expect(paid).toMatchObject({ status: 'paid', possible_double_charge: false });
    const counted = await doubleCharges();

    const second = notificationFor(invoice, { transaction_id: `second-${invoice.id}` });
    expect(await send(second)).toEqual(SUCCESS);

    const shown = await showInvoice(service, invoice.id);
    expect(shown.invoice).toMatchObject({
      status: 'paid',
      gateway_reference: first.transaction_id,
      paid_at: paid.paid_at,
      possible_double_charge: true,
    });
    expect(shown.events.map((event) => [event.transaction_id, event.applied, event.not_applied_reason])).toEqual([
      [first.transaction_id, true, null],
      [second.transaction_id, false, 'possible_double_charge'],
    ]);
    expect(shown.events[1]).toMatchObject({ status_before: 'paid', status_after: 'paid' });
    expect(await tripStatus(service, trip.id)).toBe('booked');
    expect(await doubleCharges()).toBe(counted + 1);

    // The partner's own log says it too.
    const log = expectOk<'listPaymentNotifications'>(
      await apiAs(service, tenant.credentials.sso_hmac_secret)(
        'GET',
        '/api/v1/payment-notifications/?outcome=accepted&limit=100',
      ),
    );
    const entry = log.results.find((result) => result.transaction_id === second.transaction_id);
    expect(entry).toMatchObject({ applied: false, not_applied_reason: 'possible_double_charge' });
    expect(entry?.note).toMatch(/^possible double charge/);

    // A retry of the second one is a duplicate: no event, not counted again.
    expect(await send(second)).toEqual({ status: 200, body: { status: 'duplicate' } });
    expect((await showInvoice(service, invoice.id)).events).toHaveLength(2);
    expect(await doubleCharges()).toBe(counted + 1);
  });

  it('flags nothing else: a late failed, an unknown status, a paid after refunded say why they did not apply', async () => {
    const invoice = await createInvoice(service, tenant);
    const transaction = `paid-${invoice.id}`;
    expect(await send(notificationFor(invoice, { transaction_id: transaction }))).toEqual(SUCCESS);
    expect(await send(notificationFor(invoice, { status: 'failed' }))).toEqual(SUCCESS);
    expect(await send(notificationFor(invoice, { status: 'PAID' }))).toEqual(SUCCESS);
    expect(await send(notificationFor(invoice, { status: 'refunded' }))).toEqual(SUCCESS);
    expect(await send(notificationFor(invoice))).toEqual(SUCCESS);

    const shown = await showInvoice(service, invoice.id);
    expect(shown.invoice).toMatchObject({ status: 'refunded', possible_double_charge: false });
    expect(shown.events.map((event) => [event.status, event.applied, event.not_applied_reason])).toEqual([
      ['paid', true, null],
      ['failed', false, 'status_behind'],
      ['PAID', false, 'unknown_status'],
      ['refunded', true, null],
      ['paid', false, 'status_behind'],
    ]);
  });
});

describe('two paids of different transactions at once', () => {
  /** Sessions waiting for a lock in the store's statement. */
  const waitingStores = async () =>
    (
      await service.context.database.executeSql(
        `select count(*)::int as count from pg_stat_activity
         where datname = current_database() and wait_event_type = 'Lock'
           and query like '%store_payment_notifications%'`,
        [],
      )
    ).rows[0].count as number;

  it('apply one and flag the other, whichever takes the invoice lock first', async () => {
    // Two stores, each on connections of its own, as two instances of the service are.
    const stores = [new NotificationStore(service.context.database), new NotificationStore(service.context.database)];
    for (let round = 0; round < 3; round++) {
      const invoice: InvoiceJson = await createInvoice(service, tenant);
      const bodies = ['a', 'b'].map((twin) => notificationFor(invoice, { transaction_id: `${twin}-${invoice.id}` }));
      // Both read the invoice pending, then wait for its row lock, held here until both do.
      const answers = await service.context.db.transaction(async (tx) => {
        await tx.execute(sql`select id from invoices where id = ${invoice.id} for update`);
        const storing = bodies.map((body, i) => receiveNotification(stores[i], tenant, body));
        await waitFor('both stores waiting for the invoice lock', async () => (await waitingStores()) === 2);
        return storing;
      });
      const results = (await Promise.all(answers)) as CallbackResult[];

      expect(results).toHaveLength(2);
      expect(results.filter((result) => result.accepted === 'success')).toHaveLength(2);
      const flagged = results.filter((result) => result.notAppliedReason === 'possible_double_charge');
      expect(flagged).toHaveLength(1);
      const applied = bodies[results.indexOf(flagged[0]) === 0 ? 1 : 0];
      const shown = await showInvoice(service, invoice.id);
      expect(shown.invoice).toMatchObject({
        status: 'paid',
        gateway_reference: applied.transaction_id,
        possible_double_charge: true,
      });
      expect(shown.events.filter((event) => event.applied).map((event) => event.transaction_id)).toEqual([
        applied.transaction_id,
      ]);
    }
  });
});
