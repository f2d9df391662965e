-- The payment callback's two statements (src/payments/notification-store.ts). The rule, each check
-- once and in DECISIONS §4's order, is src/payments/callback.ts: these only read what it checks and
-- store what it decided, and enforce what only the database can: the row lock on the invoice, one
-- event per (tenant, transaction_id, status, gateway) (the unique index: `on conflict do nothing`),
-- and the forward-only move, picked for the status read under the lock from the moves the service
-- planned for every status. Each takes a group of notifications as a jsonb array of objects read
-- by their field names; one callback alone is a group of one. `item` says which notification of
-- the group a row answers.
--
-- receive_payment_notification, receive_payment_notifications and receive_payment_notification_set
-- (0005, 0007, 0008, 0009) stay: release 1.0.0 calls them while a rolling upgrade runs it beside
-- this code on this schema (docs/architecture.md, "expand, then contract"). Nothing in this code
-- calls them: the contract step drops them once the last release in RELEASES no longer does.
--
-- Both are planned with enable_seqscan = off, the event lookup a lateral one: PL/pgSQL keeps a plan
-- for the session, and one made while payment_events was a page or two (a new database) would scan
-- the whole table on every call once it had grown.

-- Steps 4 and 9's reads: the invoice in the key's mode, and whether the tuple was stored before.
-- No row for a notification whose invoice does not exist.
CREATE FUNCTION payment_notification_invoices(p_notifications jsonb)
RETURNS TABLE (item integer, tenant_id uuid, amount text, currency text, known boolean)
LANGUAGE plpgsql STABLE SET enable_seqscan = off AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  select notification.item, invoices.tenant_id, invoices.amount::text, invoices.currency, seen.known is not null
  from jsonb_to_recordset(p_notifications) as notification(
         item integer, tenant uuid, invoice_id uuid, mode text, transaction_id text, status text, gateway text)
  join invoices on invoices.id = notification.invoice_id and invoices.mode = notification.mode
  left join lateral (
    select true as known from payment_events
    where payment_events.tenant_id = notification.tenant
      and payment_events.transaction_id = notification.transaction_id
      and payment_events.status = notification.status and payment_events.gateway = notification.gateway
    limit 1
  ) seen on true;
END;
$$;
--> statement-breakpoint
-- Step 10 for notifications the rule accepted, none of whose invoices or tuples appears twice in
-- the group: one insert of their events, one update of their invoices and one of their trips. A row
-- for each notification whose invoice still exists, `stored` false when the unique index found its
-- tuple stored meanwhile.
CREATE FUNCTION store_payment_notifications(p_notifications jsonb)
RETURNS TABLE (item integer, stored boolean)
LANGUAGE plpgsql SET enable_seqscan = off AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  with notification as materialized (
    select * from jsonb_to_recordset(p_notifications) as notification(
      item integer, tenant uuid, invoice_id uuid, transaction_id text, status text, gateway text,
      moves jsonb, payload text, request_id text)
  ),
  locked as materialized (
    select invoices.id, invoices.status as before, invoices.trip_id, notification.item,
           notification.moves -> invoices.status as move
    from invoices join notification on notification.invoice_id = invoices.id
    order by invoices.id
    for update of invoices
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
    select notification.tenant, plan.id, notification.transaction_id, notification.status, notification.gateway,
           notification.payload::jsonb, plan.applied, plan.before, plan.next, notification.request_id
    from plan join notification on notification.item = plan.item
    on conflict do nothing
    returning invoice_id
  ),
  moved as (
    update invoices
    set status = plan.next, gateway_reference = notification.transaction_id,
        paid_at = case when plan.set_paid_at then now() else invoices.paid_at end, updated_at = now()
    from plan join notification on notification.item = plan.item
    where invoices.id = plan.id and plan.applied and plan.id in (select invoice_id from stored)
  ),
  trip as (
    -- Two invoices of one trip in a group: the trip ends as the later of the two moves it.
    update trips set status = last_move.trip_status, updated_at = now()
    from (select distinct on (plan.trip_id) plan.trip_id, plan.trip_status from plan
          where plan.trip_status is not null and plan.id in (select invoice_id from stored)
          order by plan.trip_id, plan.item desc) last_move
    where trips.id = last_move.trip_id
  )
  select locked.item, locked.id in (select invoice_id from stored) from locked;
END;
$$;
