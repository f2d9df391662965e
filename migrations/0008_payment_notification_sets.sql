-- Payment callbacks stored together, as one set (src/payments/notification-store.ts): the group's
-- events in one insert, its invoices and trips in one update each, where receive_payment_notifications
-- (migration 0007) runs a whole statement for each callback in turn. PostgreSQL starts an executor
-- for every statement it runs, and for this plan that costs more than the rows it changes: measured
-- with groups of four, 115 µs of PostgreSQL's CPU a callback against 165 µs, with groups of eight 81
-- against 120. Same arguments, same rows and the same rules as receive_payment_notification, for a
-- group in which no invoice and no (tenant, transaction_id, status, gateway) appears twice, so that
-- no callback depends on what another in the group stores; the service sends any other group to
-- receive_payment_notifications. Invoices are locked in id order, as every statement here does. A
-- trip moved by two invoices of the group ends as the later one moves it, as it would in turn.
--
-- enable_seqscan = off, here and on the other two: the functions keep their plans for the session
-- (PL/pgSQL caches them, as a prepared statement is), planned once for the size payment_events had
-- then. On a new database that was a page or two, a sequential scan was the cheaper dedupe check,
-- and the session went on scanning the whole table on every callback as it grew, until an ANALYZE
-- replanned it (measured on PostgreSQL with autovacuum off: a new service's callbacks fell from
-- ~4000 to ~100 a second within ten seconds). Every lookup here has its index.
CREATE OR REPLACE FUNCTION receive_payment_notification_set(p_calls jsonb)
RETURNS TABLE (item integer, tenant_id uuid, amount text, currency text, known boolean, stored boolean)
LANGUAGE plpgsql SET enable_seqscan = off AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  with calls as (
    select (position - 1)::integer as item, (args->>0)::uuid as tenant, (args->>1)::uuid as invoice_id,
           args->>2 as transaction_id, args->>3 as status, args->>4 as gateway, (args->>5)::boolean as store,
           (args->>6)::numeric as amount, args->>7 as currency, (args->>8)::jsonb as moves,
           args->>9 as payload, args->>10 as request_id
    from jsonb_array_elements(p_calls) with ordinality as call(args, position)
  ),
  invoice as (
    select calls.*, invoices.tenant_id as invoice_tenant, invoices.amount as invoice_amount,
           invoices.currency as invoice_currency, seen.known is not null as known
    from calls join invoices on invoices.id = calls.invoice_id
    -- A lateral lookup, not exists (...): planned for a table of a few rows, an exists becomes one
    -- scan of the whole table per statement, hashed, and stays so as the table grows.
    left join lateral (
      select true as known from payment_events
      where payment_events.tenant_id = calls.tenant and payment_events.transaction_id = calls.transaction_id
        and payment_events.status = calls.status and payment_events.gateway = calls.gateway
      limit 1
    ) seen on true
  ),
  locked as materialized (
    select locked.id, locked.status as before, locked.trip_id, invoice.item, invoice.moves -> locked.status as move
    from invoices locked join invoice on invoice.invoice_id = locked.id
    where invoice.store and not invoice.known and invoice.invoice_tenant = invoice.tenant
      and locked.amount = invoice.amount and locked.currency = invoice.currency
    order by locked.id
    for update of locked
  ),
  plan as materialized (
    select locked.id, locked.trip_id, locked.item, locked.before, locked.move ->> 'next' as next,
           (locked.move ->> 'applied')::boolean as applied, (locked.move ->> 'paid_at')::boolean as set_paid_at,
           locked.move ->> 'trip' as trip_status
    from locked
    where locked.move is not null
  ),
  stored as (
    insert into payment_events (tenant_id, invoice_id, transaction_id, status, gateway, payload, applied,
                                status_before, status_after, request_id)
    select invoice.tenant, plan.id, invoice.transaction_id, invoice.status, invoice.gateway,
           invoice.payload::jsonb, plan.applied, plan.before, plan.next, invoice.request_id
    from plan join invoice on invoice.item = plan.item
    on conflict do nothing
    returning invoice_id
  ),
  moved as (
    update invoices
    set status = plan.next, gateway_reference = invoice.transaction_id,
        paid_at = case when plan.set_paid_at then now() else invoices.paid_at end, updated_at = now()
    from plan join invoice on invoice.item = plan.item
    where invoices.id = plan.id and plan.applied and plan.id in (select invoice_id from stored)
  ),
  trip as (
    update trips set status = last_move.trip_status, updated_at = now()
    from (select distinct on (plan.trip_id) plan.trip_id, plan.trip_status from plan
          where plan.trip_status is not null and plan.id in (select invoice_id from stored)
          order by plan.trip_id, plan.item desc) last_move
    where trips.id = last_move.trip_id
  )
  select invoice.item, invoice.invoice_tenant, invoice.invoice_amount::text, invoice.invoice_currency, invoice.known,
         invoice.invoice_id in (select invoice_id from stored)
  from invoice;
END;
$$;
--> statement-breakpoint
ALTER FUNCTION receive_payment_notification(uuid, uuid, text, text, text, boolean, numeric, text, jsonb, text, text)
  SET enable_seqscan = off;
--> statement-breakpoint
ALTER FUNCTION receive_payment_notifications(jsonb) SET enable_seqscan = off;
