-- The payment callback's database work in one call (src/payments/callback.ts, `receive`): one
-- round trip, and the statement's plan is kept by PL/pgSQL for the session, as a prepared one is.
-- The rules stay in the service: it checks the returned invoice in order (DECISIONS §4), and
-- `p_moves` is its forward-only plan from each status, picked here under the row lock. Reads only
-- (no lock) unless p_store and the invoice checks pass and the tuple is new.
CREATE OR REPLACE FUNCTION receive_payment_notification(
  p_tenant uuid, p_invoice uuid, p_transaction text, p_status text, p_gateway text, p_store boolean,
  p_amount numeric, p_currency text, p_moves jsonb, p_payload text, p_request_id text
) RETURNS TABLE (tenant_id uuid, amount text, currency text, known boolean, stored boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  with invoice as (
    select id, tenant_id, amount, currency,
           exists (select 1 from payment_events
                   where tenant_id = p_tenant and transaction_id = p_transaction
                     and status = p_status and gateway = p_gateway) as known
    from invoices where id = p_invoice
  ),
  locked as materialized (
    select locked.id, locked.status, locked.trip_id
    from invoices locked join invoice on invoice.id = locked.id
    where p_store and not invoice.known and invoice.tenant_id = p_tenant
      and locked.amount = p_amount and locked.currency = p_currency
    for update of locked
  ),
  plan as materialized (
    select locked.id, locked.trip_id, locked.status as before, move ->> 'next' as next,
           (move ->> 'applied')::boolean as applied, (move ->> 'paid_at')::boolean as set_paid_at,
           move ->> 'trip' as trip_status
    from locked cross join lateral
      (select p_moves -> locked.status as move) moves
    where move is not null
  ),
  stored as (
    insert into payment_events (tenant_id, invoice_id, transaction_id, status, gateway, payload, applied,
                                status_before, status_after, request_id)
    select p_tenant, plan.id, p_transaction, p_status, p_gateway,
           p_payload::jsonb, plan.applied, plan.before, plan.next, p_request_id
    from plan
    on conflict do nothing
    returning id
  ),
  moved as (
    update invoices
    set status = plan.next, gateway_reference = p_transaction,
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
END;
$$;
