// Payment requests on their own table, as the database runs them: the take, and the move of the
// jobs release 1.0.0 leaves in pg-boss's tables.
import { describe, expect, it } from 'vitest';
import { createInvoice as createInvoiceIn, PaymentRequests } from '../../src/payments/index.js';
import type { Mode } from '../../src/tenants/index.js';
import { useApps, useTenant, useTestContext } from '../support/apps.js';
import { createInvoice, PGBOSS_JOB_TABLE } from './support.js';

describe('payment requests', () => {
  const service = useApps(['admin'], { env: { PAYMENT_WORKER: 'false' } });
  const tenant = useTenant(service, { gateway: 'tap', payment_endpoint_url: 'https://partner.example.com/pay' });
  const sql = <Row = Record<string, unknown>>(text: string, values: unknown[] = []) =>
    service.context.database.executeSql<Row>(text, values).then((result) => result.rows);

  it('are taken by a transaction that commits to disk before they leave (synchronous_commit on)', async () => {
    // A take committed without waiting for the disk was lost in a database crash while its
    // requests were on their way, and they were taken and sent again after the restart.
    const setting = await service.context.database.driverTransaction('read write', async (tx) => {
      await tx`select * from take_payment_requests_due(1, 8, 'test-worker', 10, 86400, 120, 0)`;
      const [row] = await tx`select current_setting('synchronous_commit') as setting`;
      return row.setting;
    });
    expect(setting).toBe('on');
  });

  it('are taken without JIT compilation (jit off on the take function)', async () => {
    // The take's plan is costed far above jit_above_cost: with JIT on, each take compiled it
    // first, many times its own work, and the drain of a backlog was bounded by that. A take
    // made anew (DROP and CREATE, or CREATE OR REPLACE) loses the setting unless it says it again.
    const [take] = await sql<{ config: string[] }>(
      `select proconfig as config from pg_proc where proname = 'take_payment_requests_due'`,
    );
    expect(take.config).toContain('jit=off');
  });

  it("move from release 1.0.0's queue once, keeping attempt and due time; a running job stays until its worker is silent", async () => {
    await sql(PGBOSS_JOB_TABLE);
    const waiting = await createInvoice(service, tenant);
    const running = await createInvoice(service, tenant);
    const abandoned = await createInvoice(service, tenant);
    // As release 1.0.0 enqueued them: jobs, no row of ours.
    await sql('delete from payment_requests where invoice_id = any($1::uuid[])', [
      [waiting.id, running.id, abandoned.id],
    ]);
    const dueAt = new Date(Date.now() + 3_600_000);
    await sql(
      `insert into payment_workers (id, seen_at) values ('alive', now()), ('silent', now() - interval '1 hour')
       on conflict (id) do update set seen_at = excluded.seen_at`,
    );
    await sql(
      `insert into pgboss.job (name, data, state, start_after, started_on, output) values
         ('payment-request', jsonb_build_object('invoice_id', $1::text, 'attempt', 3), 'retry', $4, null, null),
         ('payment-request', jsonb_build_object('invoice_id', $2::text, 'attempt', 1), 'active', now(),
          now() - interval '1 hour', '{"worker": "alive"}'),
         ('payment-request', jsonb_build_object('invoice_id', $3::text, 'attempt', 2), 'active', now(),
          now() - interval '1 hour', '{"worker": "silent"}')`,
      [waiting.id, running.id, abandoned.id, dueAt.toISOString()],
    );
    const requests = new PaymentRequests(service.context.database);
    expect(await requests.moveFromPgBoss(10)).toBe(2);
    expect(await requests.moveFromPgBoss(10)).toBe(0);
    const moved = await sql<{ invoice_id: string; attempt: number; state: string; due_then: boolean }>(
      `select invoice_id, attempt, state, due_at = $2 as due_then
         from payment_requests where invoice_id = any($1::uuid[]) order by attempt`,
      [[waiting.id, running.id, abandoned.id], dueAt.toISOString()],
    );
    expect(moved).toEqual([
      { invoice_id: abandoned.id, attempt: 2, state: 'waiting', due_then: false },
      { invoice_id: waiting.id, attempt: 3, state: 'waiting', due_then: true },
    ]);
    const left = await sql<{ invoice: string }>(`select data->>'invoice_id' as invoice from pgboss.job`);
    expect(left).toEqual([{ invoice: running.id }]);
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
      createInvoiceIn(context.database, context.paymentQueue, {
        tenant_id: tenant.id,
        amount: '10.00',
        currency: 'SAR',
        mode,
      });
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
