-- One payment callback that repeats a stored event: the statement of callback-unique.sql, for an
-- invoice n whose event with transaction id n is stored already (scenarios.ts), so the statement
-- only reads: no lock, no insert, no update. See callback-unique.sql for the parameters.
\set n random(1, :invoices)
with invoice as (
  select id, tenant_id, amount, currency,
         exists (select 1 from payment_events
                 where tenant_id = :tenant::uuid and transaction_id = :n::text
                   and status = :status::text and gateway = :gateway::text) as known
  from invoices where id = ('00000000-0000-4000-8000-' || lpad(:n::text, 12, '0'))::uuid
),
locked as materialized (
  select locked.id, locked.status, locked.trip_id
  from invoices locked join invoice on invoice.id = locked.id
  where :store::boolean and not invoice.known and invoice.tenant_id = :tenant::uuid
    and locked.amount = :amount::numeric and locked.currency = :currency::text
  for update of locked
),
plan as materialized (
  select locked.id, locked.trip_id, locked.status as before, move ->> 'next' as next,
         (move ->> 'applied')::boolean as applied, (move ->> 'paid_at')::boolean as set_paid_at,
         move ->> 'trip' as trip_status
  from locked cross join lateral
    (select :plans::jsonb -> locked.status as move) moves
  where move is not null
),
stored as (
  insert into payment_events (tenant_id, invoice_id, transaction_id, status, gateway, payload, applied,
                              status_before, status_after, request_id)
  select :tenant::uuid, plan.id, :n::text, :status::text, :gateway::text,
         :payload::jsonb, plan.applied, plan.before, plan.next, :request_id::text
  from plan
  on conflict do nothing
  returning id
),
moved as (
  update invoices
  set status = plan.next, gateway_reference = :n::text,
      paid_at = case when plan.set_paid_at then now() else invoices.paid_at end, updated_at = now()
  from plan
  where invoices.id = plan.id and plan.applied and exists (select 1 from stored)
),
trip as (
  update trips set status = plan.trip_status, updated_at = now()
  from plan
  where trips.id = plan.trip_id and plan.trip_status is not null and exists (select 1 from stored)
)
select tenant_id, amount::text as amount, currency, known, exists (select 1 from stored) as stored
from invoice;
