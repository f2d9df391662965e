// Refused callbacks on record (src/payments/refusals.ts): written off the callback's statement,
// bounded in payload and in count, pruned by age and per tenant (the retention prune's rule), and
// listed on the invoice they name when it is the tenant's, whatever check refused them.
import { describe, expect, it } from 'vitest';
import { prune, retentionRules } from '../../src/maintenance/index.js';
import {
  REFUSALS_KEPT_PER_TENANT_MODE,
  REFUSALS_WAITING_MAX,
  REFUSED_PAYLOAD_MAX_BYTES,
  RefusalRecorder,
} from '../../src/payments/refusals.js';
import { useApps, useTenant, useTestContext } from '../support/apps.js';
import { waitFor } from '../support/partner-endpoint.js';
import { createInvoice, keyOf, notificationFor, notify, showInvoice } from './support.js';

const opened = useTestContext();
const tenant = useTenant(opened);

const countOf = async (where: string, values: unknown[]) =>
  (
    await opened.context.database.executeSql(
      `select count(*)::int as count from refused_notifications where ${where}`,
      values,
    )
  ).rows[0].count as number;

const refusal = (tenantId: string, payload: string | null = '{}') => ({
  tenantId,
  mode: 'live' as const,
  invoiceId: null,
  httpStatus: 400,
  error: 'Amount mismatch',
  requestId: 'req-test',
  payload,
});

describe('the recorder', () => {
  it('writes a burst in one go, cuts long payloads, and drops what arrives while it is too far behind', async () => {
    const events = { dropped: 0, failed: 0 };
    const recorder = new RefusalRecorder(opened.context.db, {
      dropped: () => events.dropped++,
      failed: () => events.failed++,
    });
    const long = JSON.stringify({ filler: 'é'.repeat(REFUSED_PAYLOAD_MAX_BYTES) });
    recorder.record(refusal(tenant.tenant.id, long));
    for (let i = 0; i < REFUSALS_WAITING_MAX + 10; i++) recorder.record(refusal(tenant.tenant.id));
    await recorder.idle();
    expect(events).toEqual({ dropped: 11, failed: 0 });
    expect(await countOf('tenant_id = $1', [tenant.tenant.id])).toBe(REFUSALS_WAITING_MAX);
    const { rows } = await opened.context.database.executeSql(
      'select octet_length(payload) as bytes, payload_truncated from refused_notifications where tenant_id = $1 and payload_truncated',
      [tenant.tenant.id],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0].bytes).toBeLessThanOrEqual(REFUSED_PAYLOAD_MAX_BYTES);
    expect(rows[0].bytes).toBeGreaterThan(REFUSED_PAYLOAD_MAX_BYTES - 2);
  });
});

describe('the prune', () => {
  const refusalRule = retentionRules({
    deliveryAttemptsDays: 0,
    auditEventsDays: 0,
    refusedNotificationsDays: 30,
    pingsDays: 0,
    breakerEventsDays: 0,
    testInvoicesDays: 0,
  }).find((rule) => rule.table === 'refused_notifications')!;

  it('removes records older than the retention and keeps the newest per tenant and mode, test never pushing out live', async () => {
    const old = await opened.createTenant();
    const crowded = await opened.createTenant();
    const CAP = REFUSALS_KEPT_PER_TENANT_MODE;
    // One reference time for the rows and the check of the newest: a slow run takes seconds between them.
    const insertedAt = new Date().toISOString();
    const insert = (tenantId: string, mode: 'live' | 'test', count: number, age: string) =>
      opened.context.database.executeSql(
        `insert into refused_notifications (tenant_id, mode, http_status, error, received_at, payload)
         select $1, $5, 400, 'Amount mismatch', $4::timestamptz - $2::interval - make_interval(secs => n), '{}'
         from generate_series(1, $3::integer) n`,
        [tenantId, age, count, insertedAt, mode],
      );
    await insert(old.tenant.id, 'live', 5, '31 days');
    await insert(old.tenant.id, 'live', 3, '1 day');
    // A tenant's live refusals, then a flood of test ones, newer, past the cap.
    await insert(crowded.tenant.id, 'live', 3, '2 hours');
    await insert(crowded.tenant.id, 'test', CAP + 1500, '1 hour');

    const pruneRefusals = async () => (await prune(opened.context.database, [refusalRule])).refused_notifications;
    const pruned = await pruneRefusals();
    expect(pruned).toBe(5 + 1500);
    expect(await countOf('tenant_id = $1', [old.tenant.id])).toBe(3);
    expect(await countOf("tenant_id = $1 and received_at < now() - interval '30 days'", [old.tenant.id])).toBe(0);
    expect(await countOf("tenant_id = $1 and mode = 'live'", [crowded.tenant.id])).toBe(3);
    expect(await countOf("tenant_id = $1 and mode = 'test'", [crowded.tenant.id])).toBe(CAP);
    // What stays is the newest.
    expect(
      await countOf(
        "tenant_id = $1 and mode = 'test' and received_at > $3::timestamptz - interval '1 hour' - make_interval(secs => $2)",
        [crowded.tenant.id, CAP + 1, insertedAt],
      ),
    ).toBe(CAP);
    expect(await pruneRefusals()).toBe(0);
  });
});

describe('refused callbacks keep their invoice', () => {
  const service = useApps(['integrations', 'admin']);
  const owner = useTenant(service, { gateway: 'tap' });
  const stranger = useTenant(service, { gateway: 'tap' });

  /** Sends `body` with `tenant`'s live key; the refusal's record once written. */
  async function refused(tenant: typeof owner, body: Record<string, unknown>, error: string) {
    const response = await notify(service, body, keyOf(tenant));
    expect(response.json()).toEqual({ error });
    const requestId = response.headers['x-request-id'];
    return waitFor(`the refusal ${requestId} on record`, async () => {
      const { rows } = await service.context.database.executeSql(
        'select invoice_id::text, error from refused_notifications where request_id = $1',
        [requestId],
      );
      return rows[0] as { invoice_id: string | null; error: string } | undefined;
    });
  }

  it('lists a refusal on the invoice its body names, whatever check refused it', async () => {
    const invoice = await createInvoice(service, owner);
    const cases: [Record<string, unknown>, string][] = [
      [{ ...notificationFor(invoice), transaction_id: undefined }, 'Missing transaction_id'],
      [notificationFor(invoice, { invoice_id: invoice.id.toUpperCase(), status: 7 }), 'Invalid status'],
      [notificationFor(invoice, { extra: 'a\u0000b' }), 'Invalid JSON body'],
      [notificationFor(invoice, { gateway: 'hyperpay' }), 'Gateway mismatch'],
    ];
    for (const [body, error] of cases) {
      expect(await refused(owner, body, error)).toEqual({ invoice_id: invoice.id, error });
    }
    const shown = await showInvoice(service, invoice.id);
    expect(shown.refused_notifications.map((refusal) => refusal.error)).toEqual(cases.map(([, error]) => error));
  });

  it("records none on another tenant's invoice, nor on the other mode's", async () => {
    const theirs = await createInvoice(service, stranger);
    const testInvoice = await createInvoice(service, owner);
    await service.context.database.executeSql(`update invoices set mode = 'test' where id = $1`, [testInvoice.id]);
    for (const invoice of [theirs, testInvoice]) {
      const body = { ...notificationFor(invoice), transaction_id: undefined };
      expect(await refused(owner, body, 'Missing transaction_id')).toEqual({
        invoice_id: null,
        error: 'Missing transaction_id',
      });
      expect((await showInvoice(service, invoice.id)).refused_notifications).toEqual([]);
    }
  });
});
