// The order of the callback's checks (DECISIONS §4, src/payments/callback.ts): a notification that
// fails two neighbouring checks is answered by the earlier one, so swapping any two of them fails
// a case here.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NotificationStore } from '../../src/payments/index.js';
import { startTestApps, type TestApps, type TestTenant } from '../support/apps.js';
import {
  createInvoice,
  type InvoiceJson,
  notificationFor,
  type RuleAnswer,
  receiveNotification,
  showInvoice,
} from './support.js';

let service: TestApps;
let tenant: TestTenant;
let other: TestTenant;
let store: NotificationStore;
let invoice: InvoiceJson;
let othersInvoice: InvoiceJson;
/** A notification of `invoice` stored before the cases run. */
let stored: Record<string, unknown>;
beforeAll(async () => {
  service = await startTestApps(['admin']);
  [tenant, other] = await Promise.all([
    service.createTenant({ gateway: 'tap' }),
    service.createTenant({ gateway: 'hyperpay' }),
  ]);
  store = new NotificationStore(service.context.database);
  [invoice, othersInvoice] = await Promise.all([createInvoice(service, tenant), createInvoice(service, other)]);
  stored = notificationFor(invoice, { transaction_id: `rule-${invoice.id}` });
  expect(await receive(stored)).toEqual({ accepted: 'success' });
});
afterAll(() => service?.stop());

const receive = (body: Record<string, unknown>, payloadJson?: string): Promise<RuleAnswer> =>
  receiveNotification(store, tenant, body, payloadJson);

const UNKNOWN_INVOICE = '00000000-0000-4000-8000-0000000000ff';
/** A number PostgreSQL's jsonb cannot hold: refused only where the payload would be stored. */
const unstorable = (body: Record<string, unknown>) =>
  JSON.stringify({ ...body, extra: '§' }).replace('"§"', '1e999999');

describe('the callback checks, two failing at once', () => {
  const cases: [string, () => Record<string, unknown>, () => RuleAnswer][] = [
    [
      'fields (3) before the invoice (4)',
      () => ({ ...notificationFor(invoice, { invoice_id: UNKNOWN_INVOICE }), transaction_id: undefined }),
      () => ({ refused: 'VALIDATION_ERROR', field: 'transaction_id' }),
    ],
    [
      'the invoice (4) before the gateway (6)',
      () => notificationFor(invoice, { invoice_id: UNKNOWN_INVOICE, gateway: 'hyperpay' }),
      () => ({ refused: 'NOT_FOUND', field: 'invoice_id' }),
    ],
    [
      'the tenant (5) before the gateway (6)',
      () => notificationFor(othersInvoice, { gateway: 'hyperpay' }),
      () => ({ refused: 'FORBIDDEN' }),
    ],
    [
      'the gateway (6) before the amount (7)',
      () => notificationFor(invoice, { gateway: 'hyperpay', amount: '1.00' }),
      () => ({ refused: 'MISMATCH', field: 'gateway' }),
    ],
    [
      'the amount (7) before the currency (8)',
      () => notificationFor(invoice, { amount: '1.00', currency: 'USD' }),
      () => ({ refused: 'MISMATCH', field: 'amount' }),
    ],
    [
      'the currency (8) before the duplicate (9)',
      () => ({ ...stored, currency: 'USD' }),
      () => ({ refused: 'MISMATCH', field: 'currency' }),
    ],
  ];
  it.each(cases)('%s', async (_case, body, answer) => {
    expect(await receive(body())).toEqual(answer());
  });

  it('answers a duplicate (9) before storing (10): one event, even with a payload it could not store', async () => {
    expect(await receive(stored, unstorable(stored))).toEqual({ accepted: 'duplicate' });
    expect((await showInvoice(service, invoice.id)).events).toHaveLength(1);
  });

  it('stores a second paid (10) and answers success, saying why it did not apply: a possible double charge', async () => {
    expect(await receive(notificationFor(invoice))).toEqual({
      accepted: 'success',
      notAppliedReason: 'possible_double_charge',
    });
    expect(await receive(notificationFor(invoice, { status: 'failed' }))).toEqual({
      accepted: 'success',
      notAppliedReason: 'status_behind',
    });
    expect(await receive(notificationFor(invoice, { status: 'PAID' }))).toEqual({
      accepted: 'success',
      notAppliedReason: 'unknown_status',
    });
    expect((await showInvoice(service, invoice.id)).invoice).toMatchObject({
      gateway_reference: stored.transaction_id,
      possible_double_charge: true,
    });
  });

  it('refuses a payload it cannot store (10) only once every check has passed', async () => {
    const mismatched = notificationFor(invoice, { amount: '1.00' });
    expect(await receive(mismatched, unstorable(mismatched))).toEqual({ refused: 'MISMATCH', field: 'amount' });
    const fresh = notificationFor(invoice);
    expect(await receive(fresh, unstorable(fresh))).toEqual({ refused: 'INVALID_JSON' });
  });
});
