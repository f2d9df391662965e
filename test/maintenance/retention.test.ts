// Retention: the prune deletes what is past its age, in batches, table by table; keeps what is
// younger, whatever a setting of 0 names, and every live payment event. Test invoices go with
// what hangs on them, except while their payment request is in flight; live invoices never go.
import { beforeAll, describe, expect, it } from 'vitest';
import { PRUNE_INTERVAL_MINUTES } from '../../src/config.js';
import { statement } from '../../src/db/statements.js';
import { prune, type RetentionSettings, retentionRules } from '../../src/maintenance/index.js';
import { apiAs, expectError, expectOk } from '../http/integrations/api.js';
import { createInvoice, createTrip } from '../payments/support.js';
import { useApps, useTenant, useTestContext } from '../support/apps.js';
import { TEST_ADMIN_TOKEN } from '../support/env.js';
import { partnerctl } from '../support/process.js';

const test = useTestContext();

/** The defaults of src/config.ts, as a test changes them. */
const settings = (changes: Partial<RetentionSettings> = {}): RetentionSettings => ({
  deliveryAttemptsDays: 90,
  auditEventsDays: 730,
  refusedNotificationsDays: 30,
  pingsDays: 30,
  breakerEventsDays: 90,
  testInvoicesDays: 7,
  ...changes,
});

const sql = (text: string, values: unknown[] = []) => test.context.database.executeSql(text, values);
const count = async (table: string) => Number((await sql(`select count(*)::int as n from ${table}`)).rows[0].n);

describe('prune', () => {
  it('deletes delivery attempts and audit events past their retention, never payment events', async () => {
    const { tenant } = await test.createTenant();
    const days = (n: number) => `now() - interval '${n} days'`;
    await sql(
      `insert into invoices (tenant_id, amount, currency, status) select $1, 10, 'SAR', 'paid' from generate_series(1, 3)`,
      [tenant.id],
    );
    const { rows: invoices } = await sql('select id from invoices where tenant_id = $1', [tenant.id]);
    const invoice = invoices[0].id;
    // 2,500 old attempts (three batches) and 10 recent ones.
    await sql(
      `insert into payment_deliveries (invoice_id, attempt, attempted_at, error)
       select $1::uuid, n, ${days(100)}, 'timeout' from generate_series(1, 2500) n
       union all select $1::uuid, n, ${days(1)}, null from generate_series(2501, 2510) n`,
      [invoice],
    );
    await sql(
      `insert into audit_events (occurred_at, actor, action) select ${days(800)}, 'old', 'POST /x' from generate_series(1, 5)`,
    );
    await sql(
      `insert into payment_events (tenant_id, invoice_id, transaction_id, status, gateway, payload, applied, status_before, status_after, received_at)
       select $1, $2, 'old-' || n, 'paid', 'tap', '{}'::jsonb, true, 'pending', 'paid', ${days(3000)} from generate_series(1, 4) n`,
      [tenant.id, invoice],
    );
    const events = await count('payment_events');
    const audits = await count('audit_events');

    const deleted = await prune(test.context.database, retentionRules(settings()));
    expect(deleted).toMatchObject({ payment_deliveries: 2500, audit_events: 5 });
    expect(await count(`payment_deliveries where invoice_id = '${invoice}'`)).toBe(10);
    expect(await count('audit_events')).toBe(audits - 5);
    expect(await count('payment_events')).toBe(events);

    // 0 keeps forever; a second prune finds nothing left.
    await sql(`insert into audit_events (occurred_at, actor, action) values (${days(5000)}, 'ancient', 'POST /x')`);
    expect(await prune(test.context.database, retentionRules(settings({ auditEventsDays: 0 })))).toMatchObject({
      payment_deliveries: 0,
      audit_events: 0,
    });
  });

  it('deletes pings and breaker events past their retention, tenant by tenant; 0 keeps them', async () => {
    const tenants = [(await test.createTenant()).tenant.id, (await test.createTenant()).tenant.id];
    for (const tenant of tenants) {
      // 1,200 old pings (two batches) and 3 recent ones; 4 old breaker events and 2 recent ones.
      await sql(
        `insert into endpoint_pings (tenant_id, endpoint_url, webhook_id, pinged_at, http_status, latency_ms)
         select $1, 'https://pay.example/hook', 'msg_ping_' || n, now() - make_interval(days => case when n <= 1200 then 31 else 29 end), 200, 40
           from generate_series(1, 1203) n`,
        [tenant],
      );
      await sql(
        `insert into payment_endpoint_breaker_events (tenant_id, event, at, consecutive_failures, error)
         select $1, 'opened', now() - make_interval(days => case when n <= 4 then 91 else 89 end), 5, 'timeout'
           from generate_series(1, 6) n`,
        [tenant],
      );
    }
    const left = async () => ({
      pings: await count(`endpoint_pings where tenant_id = any('{${tenants}}')`),
      breakerEvents: await count(`payment_endpoint_breaker_events where tenant_id = any('{${tenants}}')`),
    });

    expect(
      await prune(test.context.database, retentionRules(settings({ pingsDays: 0, breakerEventsDays: 0 }))),
    ).toMatchObject({ endpoint_pings: 0, payment_endpoint_breaker_events: 0 });
    expect(await left()).toEqual({ pings: 2 * 1203, breakerEvents: 2 * 6 });

    const deleted = await prune(test.context.database, retentionRules(settings()));
    expect(deleted.endpoint_pings).toBeGreaterThanOrEqual(2 * 1200);
    expect(deleted.payment_endpoint_breaker_events).toBeGreaterThanOrEqual(2 * 4);
    expect(await left()).toEqual({ pings: 2 * 3, breakerEvents: 2 * 2 });
  });
});

describe('the prune of test invoices', () => {
  const service = useApps(['integrations', 'admin']);
  const tenant = useTenant(service);
  let testSso: string;

  beforeAll(async () => {
    // Payment requests wait (no worker takes them here): those the prune must let go.
    await service.admin('PATCH', `/tenants/${tenant.tenant.id}`, {
      payment_endpoint_url: 'https://pay.partner.example/live',
      test_payment_endpoint_url: 'https://pay.partner.example/test',
    });
    const issued = await service.admin('POST', `/tenants/${tenant.tenant.id}/credentials`, {
      kind: 'test_sso_hmac_secret',
    });
    testSso = issued.json().secret;
  });

  const run = (text: string, values: unknown[] = []) => service.context.database.executeSql(text, values);
  const exists = async (table: string, where: string, id: string) =>
    Number((await run(`select count(*)::int as n from ${table} where ${where} = $1`, [id])).rows[0].n);
  const jobsOf = async (invoiceId: string) =>
    (await run('select state from payment_requests where invoice_id = $1', [invoiceId])).rows.map((row) => row.state);

  it('deletes old test invoices with what hangs on them, keeps one whose request is in flight until it is done, never a live one', async () => {
    const api = apiAs(service, testSso);
    const testInvoice = async () =>
      expectOk<'createTestInvoice'>(
        await api('POST', '/api/v1/test/invoices/', { amount: '10.00', currency: 'SAR' }),
        201,
      ).payment_request.invoice_id;
    const [old, inFlight, recent] = [await testInvoice(), await testInvoice(), await testInvoice()];
    const live = (await createInvoice(service, tenant)).id;
    const trip = await createTrip(service, tenant);
    // Old: past the 7 days; the old test invoice names the trip, has attempts, an event, a refused
    // callback and an idempotency key.
    await run(`update invoices set created_at = now() - interval '8 days' where id = any($1::uuid[])`, [
      [old, inFlight, live],
    ]);
    await run('update invoices set trip_id = $2 where id = $1', [old, trip.id]);
    await run(
      `insert into payment_deliveries (invoice_id, attempt, attempted_at, http_status, error)
       select $1::uuid, n, now() - interval '8 days', 503, 'endpoint answered HTTP 503' from generate_series(1, 3) n`,
      [old],
    );
    await run(
      `insert into payment_events (tenant_id, invoice_id, transaction_id, status, gateway, payload, applied, status_before, status_after)
       values ($1, $2, 'txn_old', 'failed', 'tap', '{}'::jsonb, true, 'pending', 'failed'),
              ($1, $3, 'txn_live', 'failed', 'tap', '{}'::jsonb, true, 'pending', 'failed')`,
      [tenant.tenant.id, old, live],
    );
    await run(
      `insert into refused_notifications (tenant_id, mode, invoice_id, http_status, error)
       values ($1, 'test', $2, 400, 'Amount mismatch')`,
      [tenant.tenant.id, old],
    );
    await run(
      `insert into invoice_idempotency_keys (key, request_digest, invoice_id) values ('retention-old', 'x', $1)`,
      [old],
    );
    // A worker holds the second one's request: its attempt will be recorded against the invoice.
    await run(
      `update payment_requests set state = 'taken', lease_holder = 'a worker', lease_until = now() + interval '1 hour'
        where invoice_id = $1`,
      [inFlight],
    );
    expect(await jobsOf(old)).toEqual(['waiting']);

    const deleted = await prune(service.context.database, retentionRules(settings()));
    expect(deleted.test_invoices).toBe(1);
    for (const [table, column] of [
      ['invoices', 'id'],
      ['payment_deliveries', 'invoice_id'],
      ['payment_events', 'invoice_id'],
      ['refused_notifications', 'invoice_id'],
      ['invoice_idempotency_keys', 'invoice_id'],
    ]) {
      expect(await exists(table, column, old), table).toBe(0);
    }
    // Its waiting payment request is gone: no worker takes it.
    expect(await jobsOf(old)).toEqual([]);
    expect(await jobsOf(inFlight)).toEqual(['taken']);
    expect(await exists('invoices', 'id', inFlight)).toBe(1);
    expect(await exists('invoices', 'id', recent)).toBe(1);
    // The live invoice, as old, stays with its event and its waiting request.
    expect(await exists('invoices', 'id', live)).toBe(1);
    expect(await exists('payment_events', 'invoice_id', live)).toBe(1);
    expect(await jobsOf(live)).toEqual(['waiting']);

    // To the partner the pruned invoice is gone; the trip it named stays, with no invoice.
    expectError(await api('GET', `/api/v1/payment-requests/${old}/`), 404, 'NOT_FOUND');
    const shownTrip = await service.admin('GET', `/trips/${trip.id}`);
    expect(shownTrip.statusCode).toBe(200);
    expect(shownTrip.json().trip.invoice).toBeNull();

    // Once its attempt is done, the next prune takes the other one.
    await run(
      `update payment_requests set state = 'done', outcome = 'delivered', lease_holder = null, lease_until = null
        where invoice_id = $1`,
      [inFlight],
    );
    expect((await prune(service.context.database, retentionRules(settings()))).test_invoices).toBe(1);
    expect(await exists('invoices', 'id', inFlight)).toBe(0);
    expect(await exists('invoices', 'id', live)).toBe(1);
  });

  it('keeps an old test invoice whose attempt is being recorded, without waiting for the recording', async () => {
    const api = apiAs(service, testSso);
    const invoice = expectOk<'createTestInvoice'>(
      await api('POST', '/api/v1/test/invoices/', { amount: '10.00', currency: 'SAR' }),
      201,
    ).payment_request.invoice_id;
    await run(`update invoices set created_at = now() - interval '8 days' where id = $1`, [invoice]);
    // A recording holds the request's row and locks the invoice next: a prune waiting for that row
    // while holding the invoice would deadlock with it.
    const deleted = await service.context.database.transact(async (recording) => {
      await recording(statement<[string], never>('select from payment_requests where invoice_id = $1 for update'), [
        invoice,
      ]);
      return prune(service.context.database, retentionRules(settings()));
    });
    expect(deleted.test_invoices).toBe(0);
    expect(await exists('invoices', 'id', invoice)).toBe(1);
    expect((await prune(service.context.database, retentionRules(settings()))).test_invoices).toBe(1);
  });
});

describe('partnerctl prune', () => {
  const service = useApps(['admin'], { listen: true, env: { RETENTION_AUDIT_EVENTS_DAYS: '30' } });

  it("runs the running service's prune through the admin API, with the service's retention", async () => {
    await service.context.database.executeSql(
      "insert into audit_events (occurred_at, actor, action) values (now() - interval '40 days', 'old', 'POST /y')",
      [],
    );
    // Nothing but the admin API: the database the command could reach on its own is not there.
    const env = {
      ADMIN_URL: service.urls.admin!,
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/nothing',
    };
    const run = await partnerctl(['prune', '--json'], env);
    expect(run.code, run.stderr).toBe(0);
    const answer = JSON.parse(run.stdout);
    expect(answer.deleted.audit_events).toBeGreaterThanOrEqual(1);
    const { rows } = await service.context.database.executeSql<{ count: number }>(
      "select count(*)::int as count from audit_events where occurred_at < now() - interval '30 days'",
      [],
    );
    expect(rows[0].count).toBe(0);
    // The prune is an operator's change: it is on the audit trail like any other.
    const audited = await service.admin('GET', '/audit-events?action=retention.prune');
    expect(audited.json().count).toBe(1);
  });

  it('says in its help how often the service prunes by itself', async () => {
    const help = await partnerctl(['--help'], {});
    expect(help.stdout).toContain('prune');
    expect(help.stdout).toContain(`it also does it every ${PRUNE_INTERVAL_MINUTES} minutes`);
  });
});
