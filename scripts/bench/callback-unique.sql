-- One payment callback that stores a new event and moves its invoice: the one statement
-- src/payments/callback.ts sends (`receive`), as PostgreSQL logs it (log_statement = all), with
-- the same parameters. Two differences, both for pgbench's sake: the invoice id is built from a
-- number (pgbench variables are numbers; the ceiling's own invoices have ids
-- 00000000-0000-4000-8000-<n>), and the transaction id is a random number.
-- Variables from -D (scenarios.ts): tenant, status, gateway, store, amount, currency, plans,
-- payload, request_id, invoices.
\set n random(1, :invoices)
\set txn random(1000000000, 9000000000000000)
with invoice as (
  select id, tenant_id, amount, currency,
         exists (select 1 from payment_events
                 where tenant_id = :tenant::uuid and transaction_id = :txn::text
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
  select :tenant::uuid, plan.id, :txn::text, :status::text, :gateway::text,
         :payload::jsonb, plan.applied, plan.before, plan.next, :request_id::text
  from plan
  on conflict do nothing
  returning id
),
moved as (
  update invoices
  set status = plan.next, gateway_reference = :txn::text,
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
