CREATE TABLE "payment_endpoint_breaker_events" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"tenant_id" uuid NOT NULL,
	"event" text NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"consecutive_failures" integer NOT NULL,
	"error" text
);
--> statement-breakpoint
CREATE TABLE "payment_endpoint_breakers" (
	"tenant_id" uuid PRIMARY KEY NOT NULL,
	"state" text DEFAULT 'closed' NOT NULL,
	"consecutive_failures" integer DEFAULT 0 NOT NULL,
	"cool_down_seconds" double precision DEFAULT 0 NOT NULL,
	"probe_at" timestamp with time zone,
	"last_error" text,
	"changed_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "payment_workers" (
	"id" text PRIMARY KEY NOT NULL,
	"seen_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "payment_endpoint_breaker_events" ADD CONSTRAINT "payment_endpoint_breaker_events_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payment_endpoint_breakers" ADD CONSTRAINT "payment_endpoint_breakers_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "payment_endpoint_breaker_events_tenant_idx" ON "payment_endpoint_breaker_events" USING btree ("tenant_id","at");