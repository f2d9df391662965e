CREATE TABLE "endpoint_pings" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"tenant_id" uuid NOT NULL,
	"endpoint_url" text,
	"webhook_id" text NOT NULL,
	"pinged_at" timestamp with time zone DEFAULT now() NOT NULL,
	"http_status" integer,
	"latency_ms" integer,
	"error" text
);
--> statement-breakpoint
CREATE TABLE "invoice_idempotency_keys" (
	"key" text PRIMARY KEY NOT NULL,
	"request_digest" text NOT NULL,
	"invoice_id" uuid NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "endpoint_pings" ADD CONSTRAINT "endpoint_pings_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "invoice_idempotency_keys" ADD CONSTRAINT "invoice_idempotency_keys_invoice_id_invoices_id_fk" FOREIGN KEY ("invoice_id") REFERENCES "public"."invoices"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "endpoint_pings_tenant_idx" ON "endpoint_pings" USING btree ("tenant_id","pinged_at");