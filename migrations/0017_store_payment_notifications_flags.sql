-- A second payment is flagged, not applied (DECISIONS §11). Whether a `paid` finds its invoice
-- already paid under another transaction_id is known only under the invoice's row lock, like its
-- status: two `paid`s of different transactions at once must end with one applied and the other
-- flagged. So the move is now picked by the invoice's state under the lock, its status and whether
-- its gateway_reference is this notification's transaction_id (`<status>/this_transaction`), from
-- the moves the service planned for every state (plannedMoves, src/payments/callback.ts); the rule
-- stays there. A move also says why it is not applied (stored on the event) and whether it flags
-- the invoice's possible_double_charge; the function answers the reason, for the service's counters.
--
-- No release calls store_payment_notifications (release 1.0.0 calls the receive_payment_notification*
-- functions, which stay), so it is replaced, and restated whole; its result gains a column, which
-- takes a drop and a create. Only the move's key, the event's not_applied_reason, the invoice update
-- and the final select differ from 0012.
DROP FUNCTION store_payment_notifications(jsonb);
--> statement-breakpoint
CREATE FUNCTION store_payment_notifications(p_notifications jsonb)
RETURNS TABLE (item integer, stored boolean, not_applied_reason text)
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
           notification.moves -> (invoices.status || case when invoices.gateway_reference = notification.transaction_id
                                                          then '/this_transaction' else '' end) as move
    from invoices join notification on notification.invoice_id = invoices.id
    order by invoices.id
    for update of invoices
  ),
  plan as materialized (
    select locked.id, locked.trip_id, locked.item, locked.before, locked.move ->> 'next' as next,
           (locked.move ->> 'applied')::boolean as applied, (locked.move ->> 'paid_at')::boolean as set_paid_at,
           locked.move ->> 'trip' as trip_status, locked.move ->> 'not_applied_reason' as not_applied_reason,
           (locked.move ->> 'possible_double_charge')::boolean as possible_double_charge
    from locked
    where locked.move is not null
  ),
  stored as (
    insert into payment_events (tenant_id, invoice_id, transaction_id, status, gateway, payload, applied,
                                not_applied_reason, status_before, status_after, request_id)
    select notification.tenant, plan.id, notification.transaction_id, notification.status, notification.gateway,
           notification.payload::jsonb, plan.applied, plan.not_applied_reason, plan.before, plan.next,
           notification.request_id
    from plan join notification on notification.item = plan.item
    on conflict do nothing
    returning invoice_id
  ),
  moved as (
    update invoices
    set status = plan.next,
        gateway_reference = case when plan.applied then notification.transaction_id else invoices.gateway_reference end,
        paid_at = case when plan.set_paid_at then now() else invoices.paid_at end,
        possible_double_charge = invoices.possible_double_charge or plan.possible_double_charge,
        updated_at = now()
    from plan join notification on notification.item = plan.item
    where invoices.id = plan.id and (plan.applied or plan.possible_double_charge)
      and plan.id in (select invoice_id from stored)
  ),
  trip as (
    -- Two invoices of one trip in a group: the trip ends as the later of the two moves it.
    update trips set status = last_move.trip_status, updated_at = now()
    from (select distinct on (plan.trip_id) plan.trip_id, plan.trip_status from plan
          where plan.trip_status is not null and plan.id in (select invoice_id from stored)
          order by plan.trip_id, plan.item desc) last_move
    where trips.id = last_move.trip_id
  )
  select locked.item, event.invoice_id is not null, case when event.invoice_id is not null then plan.not_applied_reason end
  from locked
  left join plan on plan.item = locked.item
  left join stored event on event.invoice_id = locked.id;
END;
$$;
