ALTER TABLE "payment_deliveries" ADD COLUMN "request_url" text;--> statement-breakpoint
ALTER TABLE "payment_deliveries" ADD COLUMN "webhook_timestamp" bigint;--> statement-breakpoint
ALTER TABLE "payment_deliveries" ADD COLUMN "request_body" text;