// Retention: the prune deletes what is past its age, in batches, table by table; keeps what is
// younger, whatever a setting of 0 names, and every payment event.
import { describe, expect, it } from 'vitest';
import { PRUNE_INTERVAL_MINUTES } from '../../src/config.js';
import { prune, retentionRules } from '../../src/maintenance/index.js';
import { useApps, useTestContext } from '../support/apps.js';
import { TEST_ADMIN_TOKEN } from '../support/env.js';
import { partnerctl } from '../support/process.js';

const test = useTestContext();

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

    const deleted = await prune(
      test.context.database,
      retentionRules({ deliveryAttemptsDays: 90, auditEventsDays: 730, refusedNotificationsDays: 30 }),
    );
    expect(deleted).toMatchObject({ payment_deliveries: 2500, audit_events: 5 });
    expect(await count(`payment_deliveries where invoice_id = '${invoice}'`)).toBe(10);
    expect(await count('audit_events')).toBe(audits - 5);
    expect(await count('payment_events')).toBe(events);

    // 0 keeps forever; a second prune finds nothing left.
    await sql(`insert into audit_events (occurred_at, actor, action) values (${days(5000)}, 'ancient', 'POST /x')`);
    expect(
      await prune(
        test.context.database,
        retentionRules({ deliveryAttemptsDays: 90, auditEventsDays: 0, refusedNotificationsDays: 30 }),
      ),
    ).toMatchObject({
      payment_deliveries: 0,
      audit_events: 0,
    });
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
    const audited = await service.admin('GET', '/audit-events?action=POST%20%2Fadmin%2Fv1%2Fprunes');
    expect(audited.json().count).toBe(1);
  });

  it('says in its help how often the service prunes by itself', async () => {
    const help = await partnerctl(['--help'], {});
    expect(help.stdout).toContain('prune');
    expect(help.stdout).toContain(`it also does it every ${PRUNE_INTERVAL_MINUTES} minutes`);
  });
});
