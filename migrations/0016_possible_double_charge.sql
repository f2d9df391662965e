ALTER TABLE "invoices" ADD COLUMN "possible_double_charge" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "payment_events" ADD COLUMN "not_applied_reason" text;--> statement-breakpoint
CREATE INDEX "invoices_possible_double_charge_idx" ON "invoices" USING btree ("created_at","id") WHERE "invoices"."possible_double_charge";