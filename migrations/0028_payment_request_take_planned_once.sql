-- The take (migration 0026) planned once per connection. Planned anew at every call (PostgreSQL's
-- choice for it: the limits are parameters), its planning cost more than its execution, paid
-- under the lock every take waits for. A generic plan must not depend on the limits' values, so
-- the requests taken are updated and read by their keys (= any of an array), never by a join whose
-- size the plan would guess; the result is unchanged.
CREATE OR REPLACE FUNCTION take_payment_requests_due(
  p_slots integer, p_per_endpoint integer, p_worker text, p_lease_seconds double precision,
  p_give_up_seconds double precision, p_probe_seconds double precision, p_lock bigint
) RETURNS TABLE (
  invoice_id uuid, attempt integer, enqueued_at timestamp with time zone, mode text,
  invoice_status text, amount text, currency text, trip_id uuid, invoice_created_at timestamp with time zone,
  tenant_id uuid, gateway text, payment_endpoint_url text, test_payment_endpoint_url text, sealed_secrets text[],
  breaker text, traceparent text
)
LANGUAGE plpgsql
-- The take is on disk before its requests leave: a crash right after it does not send them twice.
SET synchronous_commit = on
-- Planned once per connection (and again when the tables' statistics change), not at every take.
SET plan_cache_mode = force_generic_plan
-- Its plan is costed above jit_above_cost (0027): compiling it would cost many times the take.
SET jit = off
AS $$
#variable_conflict use_column
BEGIN
  PERFORM pg_advisory_xact_lock(p_lock);
  RETURN QUERY
  with recursive running as (
    select r.tenant_id, r.mode, count(*)::int as in_flight
      from payment_requests r where r.state = 'taken' group by 1, 2
  ),
  -- Each endpoint with waiting requests, one index probe each.
  endpoints (tenant_id, mode) as (
    (select r.tenant_id, r.mode from payment_requests r where r.state = 'waiting'
      order by r.tenant_id, r.mode limit 1)
    union all
    select next.tenant_id, next.mode
      from endpoints e cross join lateral (
        select r.tenant_id, r.mode from payment_requests r
         where r.state = 'waiting' and (r.tenant_id, r.mode) > (e.tenant_id, e.mode)
         order by r.tenant_id, r.mode limit 1) next
  ),
  -- Each endpoint's first due requests, as many as its window has room for.
  due as (
    select e.tenant_id, e.mode, r.invoice_id, r.due_at, coalesce(run.in_flight, 0) as in_flight
      from endpoints e
      left join running run on run.tenant_id = e.tenant_id and run.mode = e.mode
      cross join lateral (
        select r.invoice_id, r.due_at from payment_requests r
         where r.state = 'waiting' and r.tenant_id = e.tenant_id and r.mode = e.mode and r.due_at <= now()
         order by r.due_at, r.invoice_id
         limit greatest(p_per_endpoint - coalesce(run.in_flight, 0), 0)
         for update skip locked) r
  ),
  ranked as (
    select d.invoice_id, d.tenant_id, d.due_at, d.in_flight, b.state as breaker_row,
           coalesce(b.state, 'closed') as breaker, coalesce(b.probe_at <= now(), false) as probe_due,
           row_number() over (partition by d.tenant_id, d.mode order by d.due_at, d.invoice_id) as place
      from due d
      left join payment_endpoint_breakers b on b.tenant_id = d.tenant_id and d.mode = 'live'
  ),
  -- Tenant-fair: every endpoint's first before anyone's second.
  chosen as (
    select ranked.invoice_id, ranked.tenant_id, ranked.breaker <> 'closed' as probe, ranked.breaker_row
      from ranked
     where case when ranked.breaker = 'closed' then true
                when ranked.probe_due and ranked.place = 1 and ranked.in_flight = 0 then true
                else (select i.created_at < now() - make_interval(secs => p_give_up_seconds)
                        from invoices i where i.id = ranked.invoice_id)
           end
     order by ranked.place, ranked.due_at
     limit p_slots
  ),
  taken as (
    update payment_requests r
       set state = 'taken', lease_holder = p_worker, lease_until = now() + make_interval(secs => p_lease_seconds)
     where r.invoice_id = any (array(select c.invoice_id from chosen c)) and r.state = 'waiting'
    returning r.invoice_id, r.attempt, r.enqueued_at, r.mode, r.tenant_id, r.traceparent
  ),
  probing as (
    update payment_endpoint_breakers b
       set state = 'half_open', probe_at = now() + make_interval(secs => p_probe_seconds)
      from taken join chosen c on c.invoice_id = taken.invoice_id
     where c.probe and b.tenant_id = taken.tenant_id
  )
  select taken.invoice_id, taken.attempt, taken.enqueued_at, taken.mode,
         i.status, i.amount::text, i.currency, i.trip_id, i.created_at,
         t.id, t.gateway, t.payment_endpoint_url, t.test_payment_endpoint_url, payment_endpoint_secrets(t.id),
         c.breaker_row, taken.traceparent
    from taken
    join chosen c on c.invoice_id = taken.invoice_id
    join invoices i on i.id = taken.invoice_id
    join tenants t on t.id = taken.tenant_id;
END;
$$;
