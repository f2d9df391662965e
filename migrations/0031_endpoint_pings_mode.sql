-- A ping is of the tenant's live or test endpoint (DECISIONS §11: test and live never touch): the
-- portal of one mode showed the other's latest ping, or none. Pings kept so far are the live
-- endpoint's unless they went to the test endpoint's address and not to the live one's. Release
-- 1.0.0 pings without a mode while it runs beside this one: its pings are taken for live ones.
ALTER TABLE "endpoint_pings" ADD COLUMN "mode" text DEFAULT 'live' NOT NULL;--> statement-breakpoint
UPDATE "endpoint_pings" SET "mode" = 'test' FROM "tenants"
  WHERE "tenants"."id" = "endpoint_pings"."tenant_id"
    AND "endpoint_pings"."endpoint_url" = "tenants"."test_payment_endpoint_url"
    AND "endpoint_pings"."endpoint_url" IS DISTINCT FROM "tenants"."payment_endpoint_url";
