-- A tuple (transaction_id, status, gateway) is a duplicate only in the mode it was received in
-- (DECISIONS §11: test and live never touch). Before, a test callback's tuple answered `duplicate`
-- to the same tuple on a live invoice of the tenant, and the live payment was never applied; and
-- the other way round. payment_events gains its invoice's mode (the key's: a callback reads its
-- invoice only in its key's mode), and the unique index that deduplicates takes it, last, so that
-- the admin search by (tenant, transaction_id) still reads its prefix.
--
-- Expand only (docs/architecture.md). Events received so far get their mode without a rewrite of
-- the table: `live` by the column's default, then the test ones updated. Release 1.0.0's
-- receive_payment_notification* functions (0009) insert events without a mode: a trigger gives
-- such a row its invoice's. They still look a tuple up across modes, so while 1.0.0 runs beside
-- this release it answers as it did; the contract step drops the trigger with them. The two
-- functions of this release's callback (0012, 0017), which no release before calls, are replaced
-- with the mode in the lookup and in the stored event: nothing else in them changes.
ALTER TABLE "payment_events" ADD COLUMN "mode" text NOT NULL DEFAULT 'live';--> statement-breakpoint
UPDATE "payment_events" SET "mode" = 'test' FROM "invoices"
  WHERE "invoices"."id" = "payment_events"."invoice_id" AND "invoices"."mode" = 'test';--> statement-breakpoint
ALTER TABLE "payment_events" ALTER COLUMN "mode" DROP DEFAULT;--> statement-breakpoint
CREATE FUNCTION payment_event_mode_of_invoice() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.mode := (select invoices.mode from invoices where invoices.id = NEW.invoice_id);
  RETURN NEW;
END;
$$;--> statement-breakpoint
CREATE TRIGGER payment_events_mode_of_invoice BEFORE INSERT ON "payment_events"
  FOR EACH ROW WHEN (NEW.mode IS NULL) EXECUTE FUNCTION payment_event_mode_of_invoice();--> statement-breakpoint
CREATE UNIQUE INDEX "payment_events_mode_dedupe_key" ON "payment_events" USING btree ("tenant_id","transaction_id","status","gateway","mode");--> statement-breakpoint
DROP INDEX "payment_events_dedupe_key";--> statement-breakpoint
CREATE OR REPLACE FUNCTION payment_notification_invoices(p_notifications jsonb)
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
      and payment_events.mode = notification.mode
    limit 1
  ) seen on true;
END;
$$;--> statement-breakpoint
CREATE OR REPLACE FUNCTION store_payment_notifications(p_notifications jsonb)
RETURNS TABLE (item integer, stored boolean, not_applied_reason text)
LANGUAGE plpgsql SET enable_seqscan = off AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  with notification as materialized (
    select * from jsonb_to_recordset(p_notifications) as notification(
      item integer, tenant uuid, invoice_id uuid, mode text, transaction_id text, status text, gateway text,
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
    insert into payment_events (tenant_id, invoice_id, mode, transaction_id, status, gateway, payload, applied,
                                not_applied_reason, status_before, status_after, request_id)
    select notification.tenant, plan.id, notification.mode, notification.transaction_id, notification.status,
           notification.gateway,
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
