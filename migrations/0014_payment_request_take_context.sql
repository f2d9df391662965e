-- The take returns, with each job, what its attempt needs: the invoice, its tenant's endpoints and
-- sealed signing secrets, and whether the attempt is already recorded (src/payments/outbound.ts),
-- read by the statement that takes the job instead of by two more round trips per job after it.
-- No release calls the take of 0013 (release 1.0.0 has its own statement), so it is replaced, and
-- restated whole: a wrapper joining the invoices to 0013's rows would read them with a snapshot
-- taken before the advisory lock, older than the take's, and miss the invoices of jobs enqueued
-- meanwhile. Only the columns returned and the final select differ from 0013.
--
-- payment_endpoint_secrets is the one rule for which secrets sign a tenant's requests: the take
-- and src/tenants/credentials.ts (the ping) both read it.
CREATE FUNCTION payment_endpoint_secrets(p_tenant uuid) RETURNS text[]
LANGUAGE sql STABLE AS $$
  select coalesce(array_agg(c.sealed_secret order by c.created_at desc), '{}')
    from credentials c
   where c.tenant_id = p_tenant and c.kind = 'payment_endpoint_secret'
     and c.revoked_at is null and c.sealed_secret is not null
$$;
--> statement-breakpoint
DROP FUNCTION take_payment_requests(text, integer, integer, text, double precision, double precision, bigint);
--> statement-breakpoint
CREATE FUNCTION take_payment_requests(
  p_queue text, p_slots integer, p_per_endpoint integer, p_worker text,
  p_give_up_seconds double precision, p_job_timeout_seconds double precision, p_lock bigint
) RETURNS TABLE (
  id uuid, data jsonb, created_on timestamp with time zone, tenant_id text,
  invoice_tenant_id uuid, invoice_mode text, invoice_status text, amount text, currency text, trip_id uuid,
  invoice_created_at timestamp with time zone, recorded boolean,
  gateway text, payment_endpoint_url text, test_payment_endpoint_url text, sealed_secrets text[]
)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  -- Serialises takes across instances; the query below then starts with a snapshot that counts the
  -- previous holder's take (a volatile function's every statement has one of its own).
  PERFORM pg_advisory_xact_lock(p_lock);
  -- The request leaves right after the commit; a take lost in a database crash only makes the
  -- attempt again, as a worker's crash does.
  PERFORM set_config('synchronous_commit', 'off', true);
  RETURN QUERY
  with recursive running as (
    select coalesce(j.data->>'tenant_id', i.tenant_id::text) as tenant_id,
           coalesce(j.data->>'mode', i.mode) as mode, count(*)::int as in_flight
      from pgboss.job j
      left join invoices i on j.data->>'tenant_id' is null and i.id = (j.data->>'invoice_id')::uuid
     where j.name = p_queue and j.state = 'active'
     group by 1, 2
  ),
  endpoints (tenant_id, mode) as (
    (select j.data->>'tenant_id', j.data->>'mode' from pgboss.job j
      where j.name = p_queue and j.state < 'active' and j.data->>'tenant_id' is not null
      order by j.data->>'tenant_id', j.data->>'mode' limit 1)
    union all
    select next.tenant_id, next.mode
      from endpoints e cross join lateral (
        select j.data->>'tenant_id' as tenant_id, j.data->>'mode' as mode from pgboss.job j
         where j.name = p_queue and j.state < 'active'
           and (j.data->>'tenant_id', j.data->>'mode') > (e.tenant_id, e.mode)
         order by j.data->>'tenant_id', j.data->>'mode' limit 1) next
  ),
  due as (
    select e.tenant_id, e.mode, j.id, j.start_after, j.invoice_id
      from endpoints e
      left join running r on r.tenant_id = e.tenant_id and r.mode = e.mode
      cross join lateral (
        select j.id, j.start_after, j.data->>'invoice_id' as invoice_id from pgboss.job j
         where j.name = p_queue and j.state < 'active' and j.start_after < now()
           and j.data->>'tenant_id' = e.tenant_id and j.data->>'mode' = e.mode
         order by j.start_after, j.id
         limit greatest(p_per_endpoint - coalesce(r.in_flight, 0), 0)) j
    union all
    select i.tenant_id::text, i.mode, j.id, j.start_after, j.data->>'invoice_id'
      from pgboss.job j left join invoices i on i.id = (j.data->>'invoice_id')::uuid
     where j.name = p_queue and j.state < 'active' and j.start_after < now() and j.data->>'tenant_id' is null
  ),
  ranked as (
    select d.id, d.tenant_id, d.start_after, d.invoice_id, coalesce(r.in_flight, 0) as in_flight,
           coalesce(b.state, 'closed') as breaker, coalesce(b.probe_at <= now(), false) as probe_due,
           row_number() over (partition by d.tenant_id, d.mode order by d.start_after, d.id) as place
      from due d
      left join running r on r.tenant_id = d.tenant_id and r.mode = d.mode
      left join payment_endpoint_breakers b on b.tenant_id = d.tenant_id::uuid and d.mode = 'live'
  ),
  chosen as (
    select ranked.id, ranked.tenant_id, ranked.breaker <> 'closed' as probe
      from ranked
     where ranked.place <= p_per_endpoint - ranked.in_flight
       and case when ranked.breaker = 'closed' then true
                when ranked.probe_due and ranked.place = 1 and ranked.in_flight = 0 then true
                else (select i.created_at < now() - make_interval(secs => p_give_up_seconds)
                        from invoices i where i.id = ranked.invoice_id::uuid)
           end
     order by ranked.place, ranked.start_after
     limit p_slots
  ),
  taken as (
    update pgboss.job j
       set state = 'active', started_on = now(), output = jsonb_build_object('worker', p_worker),
           retry_count = case when j.started_on is not null then j.retry_count + 1 else j.retry_count end
      from chosen
     where j.name = p_queue and j.id = any(array(select chosen.id from chosen)) and j.id = chosen.id
       and j.state < 'active'
    returning j.id, j.data, j.created_on, chosen.tenant_id, chosen.probe
  ),
  probing as (
    update payment_endpoint_breakers b
       set state = 'half_open', probe_at = now() + make_interval(secs => p_job_timeout_seconds)
      from taken
     where taken.probe and b.tenant_id = taken.tenant_id::uuid
  )
  select taken.id, taken.data, taken.created_on, taken.tenant_id,
         i.tenant_id, i.mode, i.status, i.amount::text, i.currency, i.trip_id, i.created_at,
         exists (select 1 from payment_deliveries d
                  where d.invoice_id = i.id and d.attempt >= (taken.data->>'attempt')::int),
         t.gateway, t.payment_endpoint_url, t.test_payment_endpoint_url, payment_endpoint_secrets(t.id)
    from taken
    left join invoices i on i.id = (taken.data->>'invoice_id')::uuid
    left join tenants t on t.id = i.tenant_id;
END;
$$;
