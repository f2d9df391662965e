-- One payment callback that repeats a stored event: the statements of callback-unique.sql up to
-- the insert, which conflicts (the ceiling's invoice n already has the event with transaction id n),
-- so nothing is updated. See callback-unique.sql for the parameters.
\set n random(1, :invoices)
select "tenants"."id", "tenants"."slug", "tenants"."name", "tenants"."is_active", "tenants"."gateway", "tenants"."payment_endpoint_url", "tenants"."created_at", "tenants"."updated_at", "credentials"."digest" from "credentials" inner join "tenants" on "tenants"."id" = "credentials"."tenant_id" where ("credentials"."digest" = :digest and "credentials"."kind" = :kind and "credentials"."revoked_at" is null and "tenants"."is_active" = :active);
select "tenant_id", "amount", "currency" from "invoices" where "invoices"."id" = ('00000000-0000-4000-8000-' || lpad(:n::text, 12, '0'))::uuid;
begin;
select "status", "trip_id" from "invoices" where "invoices"."id" = ('00000000-0000-4000-8000-' || lpad(:n::text, 12, '0'))::uuid for update;
insert into "payment_events" ("id", "tenant_id", "invoice_id", "transaction_id", "status", "gateway", "payload", "applied", "status_before", "status_after", "request_id", "received_at") values (default, :tenant, ('00000000-0000-4000-8000-' || lpad(:n::text, 12, '0'))::uuid, :n, :status, :gateway, :payload::jsonb, :active, :status, :status, :request_id, default) on conflict do nothing returning "id";
commit;
