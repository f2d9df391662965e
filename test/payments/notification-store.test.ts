// Group commit of payment notifications (src/payments/notification-store.ts): notifications that
// arrive together are read by one statement and stored by one, and each is answered as it would be alone.
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { Statement } from '../../src/db/statements.js';
import type { CallbackResult } from '../../src/payments/index.js';
import { NotificationStore, READ_STATEMENT, STORE_STATEMENT } from '../../src/payments/index.js';
import { useApps, useTenant } from '../support/apps.js';
import {
  createInvoice,
  createTrip,
  type InvoiceJson,
  notificationFor,
  type RuleAnswer,
  receiveNotification,
  showInvoice,
  tripStatus,
} from './support.js';

const service = useApps(['admin']);
const tenant = useTenant(service, { gateway: 'tap' });

/**
 * A store on the test database that records the statements it sends (with the number of
 * notifications each carries), each sent to the database once `held` resolves, on as many
 * dedicated connections as the store asks for.
 */
function recordingStore(options: { held?: Promise<void> } = {}) {
  const statements: Statement<readonly unknown[], unknown>[] = [];
  const sizes: number[] = [];
  const store = new NotificationStore({
    dedicatedConnections: (count) => {
      const connections = service.context.database.dedicatedConnections(count);
      return {
        size: count,
        deadlineMs: connections.deadlineMs,
        run: async (statement, values) => {
          statements.push(statement);
          sizes.push(typeof values[0] === 'string' && values[0].startsWith('[') ? JSON.parse(values[0]).length : 1);
          await options.held;
          return connections.run(statement, values);
        },
      };
    },
  });
  return { store, statements, sizes };
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

const receive = (store: NotificationStore, body: Record<string, unknown>, payloadJson?: string) =>
  receiveNotification(store, tenant, body, payloadJson);

const SUCCESS: CallbackResult = { accepted: 'success' };

describe('notifications received together', () => {
  it('are read by one statement, and stored in turn where one depends on another, each answered as alone', async () => {
    const trip = await createTrip(service, tenant);
    const paid = await createInvoice(service, tenant, { trip_id: trip.id });
    const failed = await createInvoice(service, tenant);
    const refused = await createInvoice(service, tenant);
    const paidNotification = notificationFor(paid, { transaction_id: `together-${paid.id}` });
    const { store, statements, sizes } = recordingStore();

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
      { refused: 'MISMATCH', field: 'amount' },
      { refused: 'NOT_FOUND', field: 'invoice_id' },
    ]);
    // The second of the same tuple is stored after the first, in a set of its own, and finds it stored.
    expect(statements).toEqual([READ_STATEMENT, STORE_STATEMENT, STORE_STATEMENT]);
    expect(sizes).toEqual([5, 2, 1]);
    const shownPaid = await showInvoice(service, paid.id);
    expect(shownPaid.invoice.status).toBe('paid');
    expect(shownPaid.events).toHaveLength(1);
    expect(await tripStatus(service, trip.id)).toBe('booked');
    expect((await showInvoice(service, failed.id)).invoice.status).toBe('failed');
    expect((await showInvoice(service, refused.id)).events).toEqual([]);
  });

  it('are stored as one set when none depends on another, each answered and applied as it would be alone', async () => {
    const other = await service.createTenant({ gateway: 'tap' });
    const trip = await createTrip(service, tenant);
    const [paid, refunded, failed, mismatched, known, wrongGateway] = await Promise.all(
      [{ trip_id: trip.id }, { trip_id: trip.id }, {}, {}, {}, {}].map((fields) =>
        createInvoice(service, tenant, fields),
      ),
    );
    const othersInvoice = await createInvoice(service, other);
    const knownNotification = notificationFor(known, { transaction_id: `known-${known.id}` });
    const paidNotification = notificationFor(paid);
    const { store: aloneStore } = recordingStore();
    expect(await receive(aloneStore, knownNotification)).toEqual(SUCCESS);
    const { store, statements, sizes } = recordingStore();

    const answers = await Promise.all([
      receive(store, paidNotification),
      receive(store, notificationFor(refunded, { status: 'refunded' })),
      receive(store, notificationFor(failed, { status: 'cancelled' })),
      receive(store, notificationFor(mismatched, { currency: 'USD' })),
      receive(store, knownNotification),
      receive(store, notificationFor(wrongGateway, { gateway: 'hyperpay' })),
      receive(store, notificationFor(othersInvoice)),
      receive(store, notificationFor({ ...paid, id: '00000000-0000-4000-8000-00000000beef' } as InvoiceJson)),
    ]);

    expect(answers).toEqual([
      SUCCESS,
      SUCCESS,
      SUCCESS,
      { refused: 'MISMATCH', field: 'currency' },
      { accepted: 'duplicate' },
      { refused: 'MISMATCH', field: 'gateway' },
      { refused: 'FORBIDDEN' },
      { refused: 'NOT_FOUND', field: 'invoice_id' },
    ]);
    expect(statements).toEqual([READ_STATEMENT, STORE_STATEMENT]);
    expect(sizes).toEqual([8, 3]);
    const shown = await Promise.all(
      [paid, refunded, failed, mismatched, known, wrongGateway, othersInvoice].map((invoice) =>
        showInvoice(service, invoice.id),
      ),
    );
    expect(shown.map(({ invoice }) => invoice.status)).toEqual([
      'paid',
      'refunded',
      'failed',
      'pending',
      'paid',
      'pending',
      'pending',
    ]);
    expect(shown.map(({ events }) => events.length)).toEqual([1, 1, 1, 0, 1, 0, 0]);
    expect(shown[0].invoice.gateway_reference).toBe(paidNotification.transaction_id);
    expect(shown[0].invoice.paid_at).not.toBeNull();
    // Two invoices of one trip: it ends as the later of the two, in the group's order, moves it.
    const later = paid.id.toLowerCase() > refunded.id.toLowerCase() ? 'booked' : 'cancelled';
    expect(await tripStatus(service, trip.id)).toBe(later);
  });

  it('are answered one by one when one of them fails the shared statement, the others stored', async () => {
    const invoices = await Promise.all([1, 2, 3].map(() => createInvoice(service, tenant)));
    const [first, unstorable, last] = invoices.map((invoice) => notificationFor(invoice));
    const { store, statements, sizes } = recordingStore();

    const answers = await Promise.all([
      receive(store, first),
      // A number PostgreSQL's jsonb cannot hold fails the whole statement, whoever sent it.
      receive(store, unstorable, JSON.stringify({ ...unstorable, extra: '§' }).replace('"§"', '1e999999')),
      receive(store, last),
    ]);

    expect(answers).toEqual([SUCCESS, { refused: 'INVALID_JSON' }, SUCCESS]);
    expect(statements).toEqual([READ_STATEMENT, STORE_STATEMENT, STORE_STATEMENT, STORE_STATEMENT, STORE_STATEMENT]);
    expect(sizes).toEqual([3, 3, 1, 1, 1]);
    const events = await Promise.all(invoices.map(async (invoice) => (await showInvoice(service, invoice.id)).events));
    expect(events.map((stored) => stored.length)).toEqual([1, 0, 1]);
  });

  it('wait while a read is under way, and then go together', async () => {
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { store, statements, sizes } = recordingStore({ held });
    const invoices = await Promise.all([1, 2, 3, 4, 5].map(() => createInvoice(service, tenant)));

    const answers: Promise<RuleAnswer>[] = [];
    for (const invoice of invoices) {
      answers.push(receive(store, notificationFor(invoice)));
      await nextTurn();
    }
    expect(sizes).toEqual([1]);
    release();

    expect(await Promise.all(answers)).toEqual(invoices.map(() => SUCCESS));
    // The four that waited were read together.
    const reads = sizes.filter((_size, index) => statements[index] === READ_STATEMENT);
    expect(reads).toEqual([1, 4]);
    const shown = await Promise.all(invoices.map((invoice) => showInvoice(service, invoice.id)));
    expect(shown.map(({ invoice }) => invoice.status)).toEqual(invoices.map(() => 'paid'));
  });

  it('two paids of one invoice under different transactions: stored in turn, the second flagged, not applied', async () => {
    const invoice = await createInvoice(service, tenant);
    const [first, second] = ['one', 'two'].map((twin) =>
      notificationFor(invoice, { transaction_id: `${twin}-${invoice.id}` }),
    );
    const { store, statements, sizes } = recordingStore();

    const answers = await Promise.all([receive(store, first), receive(store, second)]);

    expect(answers).toEqual([SUCCESS, { accepted: 'success', notAppliedReason: 'possible_double_charge' }]);
    expect(statements).toEqual([READ_STATEMENT, STORE_STATEMENT, STORE_STATEMENT]);
    expect(sizes).toEqual([2, 1, 1]);
    const shown = await showInvoice(service, invoice.id);
    expect(shown.invoice).toMatchObject({ gateway_reference: first.transaction_id, possible_double_charge: true });
  });

  it("gives an event stored without a mode, as release 1.0.0's functions store it, its invoice's mode", async () => {
    const { executeSql } = service.context.database;
    const invoice = await createInvoice(service, tenant);
    await executeSql(`update invoices set mode = 'test' where id = $1`, [invoice.id]);
    await executeSql(
      `insert into payment_events (tenant_id, invoice_id, transaction_id, status, gateway, payload, applied,
                                   status_before, status_after)
       values ($1, $2, 'txn-of-1.0.0', 'paid', 'tap', '{}', true, 'pending', 'paid')`,
      [tenant.tenant.id, invoice.id],
    );
    const { rows } = await executeSql('select mode from payment_events where invoice_id = $1', [invoice.id]);
    expect(rows).toEqual([{ mode: 'test' }]);
  });

  it('is sent alone when it arrives alone', async () => {
    const { store, statements, sizes } = recordingStore();
    expect(await receive(store, notificationFor(await createInvoice(service, tenant)))).toEqual(SUCCESS);
    expect(statements).toEqual([READ_STATEMENT, STORE_STATEMENT]);
    expect(sizes).toEqual([1, 1]);
  });
});

describe('the read statement', () => {
  // PL/pgSQL keeps a plan for the session. Planned while payment_events is a page (a new database),
  // an exists () check became one hashed scan of the whole table per statement, kept as it grew.
  it('looks each notification up by its index, whatever size the table had when it was planned', async () => {
    const invoices = await Promise.all([1, 2, 3, 4, 5].map(() => createInvoice(service, tenant)));
    const lookup = (invoice: InvoiceJson, item: number) => ({
      item,
      tenant: tenant.tenant.id,
      invoice_id: invoice.id,
      mode: 'live',
      transaction_id: `plan-${invoice.id}`,
      status: 'paid',
      gateway: 'tap',
    });
    const events = (count: number, prefix: string) => sql`
      insert into payment_events (tenant_id, invoice_id, transaction_id, status, gateway, payload, applied, status_before, status_after)
      select ${tenant.tenant.id}::uuid, ${invoices[0].id}::uuid, ${prefix} || n, 'paid', 'tap', '{}', true, 'pending', 'paid'
      from generate_series(1, ${count}::integer) n`;
    const rowsRead = sql`select coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) as read
      from pg_stat_xact_user_tables where relname = 'payment_events'`;
    const readGroup = (group: InvoiceJson[]) =>
      sql`select * from payment_notification_invoices(${JSON.stringify(group.map(lookup))}::jsonb)`;

    const read = await service.context.db.transaction(async (tx) => {
      // The plan every later call would keep, made now, while the table holds a few rows.
      await tx.execute(sql`set local plan_cache_mode = force_generic_plan`);
      await tx.execute(events(20, 'few-'));
      await tx.execute(readGroup(invoices.slice(1, 3)));
      await tx.execute(events(5000, 'many-'));
      const [before] = await tx.execute<{ read: string }>(rowsRead);
      const found = await tx.execute<{ known: boolean }>(readGroup(invoices.slice(3, 5)));
      expect(found.map((row) => row.known)).toEqual([false, false]);
      const [after] = await tx.execute<{ read: string }>(rowsRead);
      return Number(after.read) - Number(before.read);
    });
    expect(read).toBeLessThan(50);
  });
});
