CREATE TABLE "refused_notifications" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"tenant_id" uuid NOT NULL,
	"mode" text NOT NULL,
	"invoice_id" uuid,
	"http_status" integer NOT NULL,
	"error" text NOT NULL,
	"request_id" text,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	"payload" text,
	"payload_truncated" boolean DEFAULT false NOT NULL
);
--> statement-breakpoint
ALTER TABLE "invoices" ADD COLUMN "mode" text DEFAULT 'live' NOT NULL;--> statement-breakpoint
ALTER TABLE "tenants" ADD COLUMN "test_payment_endpoint_url" text;--> statement-breakpoint
ALTER TABLE "refused_notifications" ADD CONSTRAINT "refused_notifications_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "refused_notifications" ADD CONSTRAINT "refused_notifications_invoice_id_invoices_id_fk" FOREIGN KEY ("invoice_id") REFERENCES "public"."invoices"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "refused_notifications_tenant_received_idx" ON "refused_notifications" USING btree ("tenant_id","received_at","id");--> statement-breakpoint
CREATE INDEX "refused_notifications_invoice_idx" ON "refused_notifications" USING btree ("invoice_id","received_at");--> statement-breakpoint
CREATE INDEX "refused_notifications_received_idx" ON "refused_notifications" USING btree ("received_at");--> statement-breakpoint
CREATE INDEX "invoices_tenant_mode_created_idx" ON "invoices" USING btree ("tenant_id","mode","created_at","id");--> statement-breakpoint
-- hand-written below
-- Test mode (src/payments/modes.ts): a callback reads its invoice only in the mode of the key that
-- sent it, so the other mode's invoice is one that does not exist (`Invoice not found`), and
-- nothing else changes. The three statements of the callback take the mode as one more argument;
-- the earlier signature stays (expand-only: the previous release calls it) and means `live`.
-- A test invoice never moves its trip: the service plans its moves without one.
CREATE OR REPLACE FUNCTION receive_payment_notification(
  p_tenant uuid, p_invoice uuid, p_transaction text, p_status text, p_gateway text, p_store boolean,
  p_amount numeric, p_currency text, p_moves jsonb, p_payload text, p_request_id text, p_mode text
) RETURNS TABLE (tenant_id uuid, amount text, currency text, known boolean, stored boolean)
LANGUAGE plpgsql SET enable_seqscan = off AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  with invoice as (
    select id, tenant_id, amount, currency,
           exists (select 1 from payment_events
                   where tenant_id = p_tenant and transaction_id = p_transaction
                     and status = p_status and gateway = p_gateway) as known
    from invoices where id = p_invoice and mode = p_mode
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
--> statement-breakpoint
CREATE OR REPLACE FUNCTION receive_payment_notification(
  p_tenant uuid, p_invoice uuid, p_transaction text, p_status text, p_gateway text, p_store boolean,
  p_amount numeric, p_currency text, p_moves jsonb, p_payload text, p_request_id text
) RETURNS TABLE (tenant_id uuid, amount text, currency text, known boolean, stored boolean)
LANGUAGE sql AS $$
  select * from receive_payment_notification(p_tenant, p_invoice, p_transaction, p_status, p_gateway, p_store,
    p_amount, p_currency, p_moves, p_payload, p_request_id, 'live')
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION receive_payment_notifications(p_calls jsonb)
RETURNS TABLE (item integer, tenant_id uuid, amount text, currency text, known boolean, stored boolean)
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
  args jsonb;
  call_index integer := 0;
BEGIN
  FOR args IN SELECT value FROM jsonb_array_elements(p_calls) LOOP
    RETURN QUERY SELECT call_index, received.* FROM receive_payment_notification(
      (args->>0)::uuid, (args->>1)::uuid, args->>2, args->>3, args->>4, (args->>5)::boolean,
      (args->>6)::numeric, args->>7, (args->>8)::jsonb, args->>9, args->>10, coalesce(args->>11, 'live')) received;
    call_index := call_index + 1;
  END LOOP;
END;
$$;
--> statement-breakpoint
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
           args->>9 as payload, args->>10 as request_id,
           coalesce(args->>11, 'live') as mode
    from jsonb_array_elements(p_calls) with ordinality as call(args, position)
  ),
  invoice as (
    select calls.*, invoices.tenant_id as invoice_tenant, invoices.amount as invoice_amount,
           invoices.currency as invoice_currency, seen.known is not null as known
    from calls join invoices on invoices.id = calls.invoice_id and invoices.mode = calls.mode
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
