CREATE TABLE "payment_requests" (
	"invoice_id" uuid PRIMARY KEY NOT NULL,
	"tenant_id" uuid NOT NULL,
	"mode" text NOT NULL,
	"attempt" integer DEFAULT 1 NOT NULL,
	"state" text DEFAULT 'waiting' NOT NULL,
	"due_at" timestamp with time zone DEFAULT now() NOT NULL,
	"enqueued_at" timestamp with time zone DEFAULT now() NOT NULL,
	"lease_holder" text,
	"lease_until" timestamp with time zone,
	"outcome" text
);
--> statement-breakpoint
ALTER TABLE "payment_requests" ADD CONSTRAINT "payment_requests_invoice_id_invoices_id_fk" FOREIGN KEY ("invoice_id") REFERENCES "public"."invoices"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "payment_requests" ADD CONSTRAINT "payment_requests_tenant_id_tenants_id_fk" FOREIGN KEY ("tenant_id") REFERENCES "public"."tenants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "payment_requests_waiting_idx" ON "payment_requests" USING btree ("tenant_id","mode","due_at","invoice_id") WHERE state = 'waiting';--> statement-breakpoint
CREATE INDEX "payment_requests_taken_idx" ON "payment_requests" USING btree ("tenant_id","mode","lease_until") WHERE state = 'taken';