-- The take by places (docs/payment-delivery.md, "Places"). A place is one request in flight to an
-- endpoint at a time, with the next one behind it so that the next exchange starts at the
-- previous one's answer, not at its recording: the window counts places, not requests. A place
-- is named by its lease holder, `<worker>#<number>`, which the recording's handover keeps. It
-- replaces take_payment_requests_due (0028), which no release calls (1.0.0 took from pg-boss).
DROP FUNCTION take_payment_requests_due(integer, integer, text, double precision, double precision, double precision, bigint);--> statement-breakpoint
CREATE FUNCTION take_payment_request_places(
  p_places integer, p_per_endpoint integer, p_place_depth integer, p_worker text, p_first_place bigint,
  p_lease_seconds double precision, p_give_up_seconds double precision, p_probe_seconds double precision,
  p_lock bigint
) RETURNS TABLE (
  invoice_id uuid, attempt integer, enqueued_at timestamp with time zone, mode text,
  invoice_status text, amount text, currency text, trip_id uuid, invoice_created_at timestamp with time zone,
  tenant_id uuid, gateway text, payment_endpoint_url text, test_payment_endpoint_url text, sealed_secrets text[],
  breaker text, traceparent text, lease_holder text
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
    select r.tenant_id, r.mode, count(distinct r.lease_holder)::int as in_flight
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
  -- Each endpoint's first due requests, as many as its free places hold.
  due as (
    select e.tenant_id, e.mode, r.invoice_id, r.due_at, coalesce(run.in_flight, 0) as in_flight
      from endpoints e
      left join running run on run.tenant_id = e.tenant_id and run.mode = e.mode
      cross join lateral (
        select r.invoice_id, r.due_at from payment_requests r
         where r.state = 'waiting' and r.tenant_id = e.tenant_id and r.mode = e.mode and r.due_at <= now()
         order by r.due_at, r.invoice_id
         limit greatest(p_per_endpoint - coalesce(run.in_flight, 0), 0) * p_place_depth
         for update skip locked) r
  ),
  ranked as (
    select d.invoice_id, d.tenant_id, d.mode, d.due_at, d.in_flight, b.state as breaker_row,
           coalesce(b.state, 'closed') as breaker, coalesce(b.probe_at <= now(), false) as probe_due,
           row_number() over (partition by d.tenant_id, d.mode order by d.due_at, d.invoice_id) as nth
      from due d
      left join payment_endpoint_breakers b on b.tenant_id = d.tenant_id and d.mode = 'live'
  ),
  -- What may go: to a closed breaker's endpoint, the probe of an open one, or a last attempt.
  eligible as (
    select ranked.*,
           row_number() over endpoint as nth_eligible,
           least(count(*) over (partition by ranked.tenant_id, ranked.mode),
                 greatest(p_per_endpoint - ranked.in_flight, 0), p_places) as endpoint_places,
           case when ranked.breaker = 'closed' then p_place_depth else 1 end as depth
      from ranked
     where case when ranked.breaker = 'closed' then true
                when ranked.probe_due and ranked.nth = 1 and ranked.in_flight = 0 then true
                else (select i.created_at < now() - make_interval(secs => p_give_up_seconds)
                        from invoices i where i.id = ranked.invoice_id)
           end
    window endpoint as (partition by ranked.tenant_id, ranked.mode order by ranked.due_at, ranked.invoice_id)
  ),
  -- As many places as the endpoint has requests, up to its free ones (and the worker's), the
  -- requests dealt to them in turn: the first ones leave at once, the next ones at their answers. An endpoint whose breaker
  -- is not closed gets a request a place.
  placed as (
    select eligible.*, (eligible.nth_eligible - 1) % eligible.endpoint_places as endpoint_place
      from eligible
     where eligible.nth_eligible <= eligible.endpoint_places * eligible.depth
  ),
  -- Tenant-fair: every endpoint's first place before anyone's second, the oldest due first.
  numbered as (
    select placed.*,
           dense_rank() over (order by placed.endpoint_place, placed.place_due, placed.tenant_id, placed.mode) as place
      from (select placed.*, min(placed.due_at) over (partition by placed.tenant_id, placed.mode, placed.endpoint_place)
                     as place_due
              from placed) placed
  ),
  chosen as (
    select numbered.invoice_id, numbered.tenant_id, numbered.breaker <> 'closed' as probe, numbered.breaker_row,
           numbered.place, numbered.nth_eligible, p_worker || '#' || (p_first_place + numbered.place - 1) as holder
      from numbered
     where numbered.place <= p_places
  ),
  taken as (
    update payment_requests r
       set state = 'taken', lease_until = now() + make_interval(secs => p_lease_seconds),
           lease_holder = (select c.holder from chosen c where c.invoice_id = r.invoice_id)
     where r.invoice_id = any (array(select c.invoice_id from chosen c)) and r.state = 'waiting'
    returning r.invoice_id, r.attempt, r.enqueued_at, r.mode, r.tenant_id, r.traceparent, r.lease_holder
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
         c.breaker_row, taken.traceparent, taken.lease_holder
    from taken
    join chosen c on c.invoice_id = taken.invoice_id
    join invoices i on i.id = taken.invoice_id
    join tenants t on t.id = taken.tenant_id
   -- A place's requests in the order they go.
   order by c.place, c.nth_eligible;
END;
$$;
