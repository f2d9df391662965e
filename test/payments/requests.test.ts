// Payment requests on their own table, as the database runs them: the take, and the move of the
// jobs release 1.0.0 leaves in pg-boss's tables.
import { sql as drizzleSql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createInvoice as createInvoiceIn, PaymentRequests, type RecordedAttempt } from '../../src/payments/index.js';
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
      await tx`select * from take_payment_request_places(1, 8, 2, 'test-worker', 0, 10, 86400, 120, 0)`;
      const [row] = await tx`select current_setting('synchronous_commit') as setting`;
      return row.setting;
    });
    expect(setting).toBe('on');
  });

  it('are taken without JIT compilation, by a plan made once per connection', async () => {
    // The take's plan is costed far above jit_above_cost: with JIT on, each take compiled it
    // first, many times its own work, and the drain of a backlog was bounded by that. Planned
    // anew at every call (PostgreSQL's choice for it), its planning cost more than its execution.
    // A take made anew (DROP and CREATE, or CREATE OR REPLACE) loses the settings unless it says them again.
    const [take] = await sql<{ config: string[] }>(
      `select proconfig as config from pg_proc where proname = 'take_payment_request_places'`,
    );
    expect(take.config).toEqual(expect.arrayContaining(['jit=off', 'plan_cache_mode=force_generic_plan']));
  });

  describe('taken by places', () => {
    const endpoint = useTenant(service, { gateway: 'tap', payment_endpoint_url: 'https://partner.example.com/pay' });
    const requests = () => new PaymentRequests(service.context.database);
    const take = (worker: string, places: number, firstPlace = 0) =>
      requests().take({
        places,
        perEndpoint: 3,
        placeDepth: 2,
        worker,
        firstPlace,
        leaseSeconds: 10,
        giveUpAfterSeconds: 86_400,
        probeSeconds: 120,
      });
    const placesOf = (taken: { holder: string; invoice: { id: string } }[]) =>
      taken.map(({ holder, invoice }) => [holder, invoice.id]);

    it('each holding the next due requests up to its depth; the window counts places, not requests', async () => {
      // Nothing else waiting in this file's database: the take is tenant-fair across all of it.
      await sql(`update payment_requests set state = 'done' where state <> 'done'`);
      const ids: string[] = [];
      for (let i = 0; i < 9; i++) ids.push((await createInvoice(service, endpoint)).id);
      // The requests dealt to the places in turn: the first two leave at once.
      expect(placesOf(await take('first', 2, 5))).toEqual([
        ['first#5', ids[0]],
        ['first#5', ids[2]],
        ['first#6', ids[1]],
        ['first#6', ids[3]],
      ]);
      // One place of three is left, whatever the requests taken: four.
      expect(placesOf(await take('second', 4))).toEqual([
        ['second#0', ids[4]],
        ['second#0', ids[5]],
      ]);
      expect(await take('third', 4)).toEqual([]);
      // A place that ends gives its room back.
      await sql(`update payment_requests set state = 'done' where lease_holder = 'first#5'`);
      expect(placesOf(await take('third', 4))).toEqual([
        ['third#0', ids[6]],
        ['third#0', ids[7]],
      ]);
    });

    it('as many as the requests when fewer than the free places: none waits behind another', async () => {
      await sql(`update payment_requests set state = 'done' where state <> 'done'`);
      const ids: string[] = [];
      for (let i = 0; i < 2; i++) ids.push((await createInvoice(service, endpoint)).id);
      expect(placesOf(await take('spread', 8))).toEqual([
        ['spread#0', ids[0]],
        ['spread#1', ids[1]],
      ]);
    });
  });

  describe('a delivered attempt handing its row in its place over', () => {
    const endpoint = useTenant(service, { gateway: 'tap', payment_endpoint_url: 'https://partner.example.com/pay' });
    /** A place of a worker's, the lease holder of what it holds. */
    const WORKER = 'handing-worker';
    const PLACE = `${WORKER}#0`;
    const requests = () => new PaymentRequests(service.context.database);
    /** Three new requests of the endpoint, due now, oldest first, and no other; the first taken by WORKER. */
    const threeRequests = async () => {
      await sql(`update payment_requests set state = 'done' where tenant_id = $1`, [endpoint.tenant.id]);
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await createInvoice(service, endpoint)).id);
      await sql(
        `update payment_requests set state = 'taken', lease_holder = $2, lease_until = now() + interval '10 seconds'
                  where invoice_id = $1`,
        [ids[0], PLACE],
      );
      return ids;
    };
    const attempt = (invoiceId: string, fields: Partial<RecordedAttempt> = {}): RecordedAttempt => ({
      invoiceId,
      holder: PLACE,
      attempt: 1,
      attemptedAt: new Date(),
      httpStatus: 200,
      latencyMs: 5,
      error: null,
      responseBody: '{}',
      paymentUrl: null,
      requestUrl: 'https://partner.example.com/pay',
      webhookTimestamp: 1_800_000_000,
      requestBody: '{}',
      retryInSeconds: null,
      outcome: 'delivered',
      handOver: { requests: 1, leaseSeconds: 10 },
      ...fields,
    });
    const states = (ids: string[]) =>
      sql<{ state: string; lease_holder: string | null }>(
        `select state, lease_holder from payment_requests where invoice_id = any($1::uuid[])
          order by array_position($1::uuid[], invoice_id)`,
        [ids],
      );

    it("to the endpoint's next due request, leased to the same place: as many taken as before", async () => {
      const ids = await threeRequests();
      const recording = await requests().record(attempt(ids[0]));
      expect(recording).toMatchObject({ recorded: true, breaker: null });
      expect(recording.handedTo).toMatchObject([
        {
          invoice: { id: ids[1], tenantId: endpoint.tenant.id, mode: 'live', status: 'pending', amount: '100.00' },
          attempt: 1,
          tenant: { id: endpoint.tenant.id, paymentEndpointUrl: 'https://partner.example.com/pay' },
          breaker: null,
          holder: PLACE,
        },
      ]);
      expect(await states(ids)).toEqual([
        { state: 'done', lease_holder: null },
        { state: 'taken', lease_holder: PLACE },
        { state: 'waiting', lease_holder: null },
      ]);
    });

    it('to as many of them as asked for, in the order they go: a place taken shallow is brought to its depth', async () => {
      const ids = await threeRequests();
      const { handedTo } = await requests().record(attempt(ids[0], { handOver: { requests: 2, leaseSeconds: 10 } }));
      expect(handedTo.map((request) => request.invoice.id)).toEqual([ids[1], ids[2]]);
      expect(await states(ids)).toEqual([
        { state: 'done', lease_holder: null },
        { state: 'taken', lease_holder: PLACE },
        { state: 'taken', lease_holder: PLACE },
      ]);
    });

    it('is not given back by a sweep whose list of what the worker runs was made before the handover', async () => {
      const ids = await threeRequests();
      const { handedTo } = await requests().record(attempt(ids[0]));
      expect(handedTo.map((request) => request.invoice.id)).toEqual([ids[1]]);
      // The worker's sweep, its list made while the recording was under way: without the request handed over.
      expect(await requests().renewLeases(WORKER, [], 10)).toBe(0);
      expect((await states(ids)).map((row) => row.state)).toEqual(['done', 'taken', 'waiting']);
      // Once its lease has ended (the worker stopped, or could not record it), a sweep gives it back.
      await sql(`update payment_requests set lease_until = now() - interval '1 second' where invoice_id = $1`, [
        ids[1],
      ]);
      expect(await requests().renewLeases('another-worker', [], 10)).toBe(1);
      expect((await states(ids)).map((row) => row.state)).toEqual(['done', 'waiting', 'waiting']);
    });

    it('are renewed by a sweep that does not wait for the rows a recording under way holds', async () => {
      // The sweep and a recording lock rows of the same worker: when each waited for the other's,
      // they deadlocked, and the recording was lost to the deadlock check a second later.
      const ids = await threeRequests();
      await sql(
        `update payment_requests set state = 'taken', lease_holder = $2, lease_until = now() + interval '2 seconds'
          where invoice_id = $1`,
        [ids[1], PLACE],
      );
      const leaseOf = async (id: string) =>
        (
          await sql<{ left: number }>(
            `select extract(epoch from lease_until - now())::float8 as left from payment_requests where invoice_id = $1`,
            [id],
          )
        )[0].left;
      let lockTaken!: () => void;
      const locked = new Promise<void>((resolve) => (lockTaken = resolve));
      let renewed!: () => void;
      const sweepDone = new Promise<void>((resolve) => (renewed = resolve));
      const recording = service.context.db.transaction(async (tx) => {
        await tx.execute(drizzleSql`select 1 from payment_requests where invoice_id = ${ids[0]} for update`);
        lockTaken();
        // Held until the sweep has ended: a sweep that waited for this row would never end.
        await sweepDone;
      });
      await locked;
      const leaseBefore = await leaseOf(ids[0]);
      expect(await requests().renewLeases(WORKER, [ids[0], ids[1]], 30)).toBe(0);
      renewed();
      await recording;
      expect(await leaseOf(ids[1])).toBeGreaterThan(20);
      expect(await leaseOf(ids[0])).toBeLessThanOrEqual(leaseBefore);
    });

    it("one request for each of the endpoint's attempts recorded together", async () => {
      const ids = await threeRequests();
      await sql(`update payment_requests set state = 'taken', lease_holder = $2 where invoice_id = $1`, [
        ids[1],
        PLACE,
      ]);
      const more = [(await createInvoice(service, endpoint)).id, (await createInvoice(service, endpoint)).id];
      const [first, second] = await Promise.all([
        requests().record(attempt(ids[0])),
        requests().record(attempt(ids[1])),
      ]);
      expect([...first.handedTo, ...second.handedTo].map((request) => request.invoice.id).sort()).toEqual(
        [ids[2], more[0]].sort(),
      );
      expect((await states([...ids, ...more])).map((row) => row.state)).toEqual([
        'done',
        'done',
        'taken',
        'taken',
        'waiting',
      ]);
    });

    it('given back unsent by their place: due again as they were, none that another place holds', async () => {
      const ids = await threeRequests();
      await sql(
        `update payment_requests set state = 'taken', lease_holder = 'other-worker#0',
                lease_until = now() + interval '10 seconds' where invoice_id = $1`,
        [ids[1]],
      );
      const dueAt = () =>
        sql<{ due_at: string }>('select due_at::text from payment_requests where invoice_id = $1', [ids[0]]);
      const dueBefore = await dueAt();
      await requests().giveBack(PLACE, ids);
      expect(await states(ids)).toEqual([
        { state: 'waiting', lease_holder: null },
        { state: 'taken', lease_holder: 'other-worker#0' },
        { state: 'waiting', lease_holder: null },
      ]);
      expect(await dueAt()).toEqual(dueBefore);
    });

    it('never when the worker has no room, the attempt failed, or the breaker is not closed', async () => {
      const failure = { httpStatus: 503, error: 'endpoint answered HTTP 503', outcome: 'failed' as const };
      const cases: [string, Partial<RecordedAttempt>][] = [
        ['no room', { handOver: null }],
        ['failed', { ...failure, retryInSeconds: 60 }],
        ['breaker half-open', {}],
      ];
      for (const [name, fields] of cases) {
        const ids = await threeRequests();
        if (name === 'breaker half-open') {
          await sql(`insert into payment_endpoint_breakers (tenant_id, state) values ($1, 'half_open')`, [
            endpoint.tenant.id,
          ]);
        }
        const recording = await requests().record(attempt(ids[0], fields));
        expect({ name, recorded: recording.recorded, handedTo: recording.handedTo }).toEqual({
          name,
          recorded: true,
          handedTo: [],
        });
        expect((await states(ids.slice(1))).map((row) => row.state)).toEqual(['waiting', 'waiting']);
      }
      await sql('delete from payment_endpoint_breakers where tenant_id = $1', [endpoint.tenant.id]);
    });
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
