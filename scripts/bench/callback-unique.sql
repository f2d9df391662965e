-- One payment callback that stores a new event and moves its invoice: the statements
-- src/payments/callback.ts and src/tenants/credentials.ts send, as PostgreSQL logs them
-- (log_statement = all), with the same parameters. Two differences, both for pgbench's sake:
-- the invoice id is built from a number (pgbench variables are numbers; the ceiling's own
-- invoices have ids 00000000-0000-4000-8000-<n>), and the transaction id is a random number.
-- Variables from -D: digest, kind, active, tenant, status, gateway, payload, request_id, invoices.
\set n random(1, :invoices)
\set txn random(1000000000, 9000000000000000)
select "tenants"."id", "tenants"."slug", "tenants"."name", "tenants"."is_active", "tenants"."gateway", "tenants"."payment_endpoint_url", "tenants"."created_at", "tenants"."updated_at", "credentials"."digest" from "credentials" inner join "tenants" on "tenants"."id" = "credentials"."tenant_id" where ("credentials"."digest" = :digest and "credentials"."kind" = :kind and "credentials"."revoked_at" is null and "tenants"."is_active" = :active);
select "tenant_id", "amount", "currency" from "invoices" where "invoices"."id" = ('00000000-0000-4000-8000-' || lpad(:n::text, 12, '0'))::uuid;
begin;
select "status", "trip_id" from "invoices" where "invoices"."id" = ('00000000-0000-4000-8000-' || lpad(:n::text, 12, '0'))::uuid for update;
insert into "payment_events" ("id", "tenant_id", "invoice_id", "transaction_id", "status", "gateway", "payload", "applied", "status_before", "status_after", "request_id", "received_at") values (default, :tenant, ('00000000-0000-4000-8000-' || lpad(:n::text, 12, '0'))::uuid, :txn, :status, :gateway, :payload::jsonb, :active, :status_before, :status, :request_id, default) on conflict do nothing returning "id";
update "invoices" set "status" = :status, "gateway_reference" = :txn, "paid_at" = now(), "updated_at" = now() where "invoices"."id" = ('00000000-0000-4000-8000-' || lpad(:n::text, 12, '0'))::uuid;
commit;
