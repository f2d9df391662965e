ALTER TABLE "audit_events" ADD COLUMN "route" text;--> statement-breakpoint
ALTER TABLE "audit_events" ADD COLUMN "summary" text;--> statement-breakpoint
ALTER TABLE "audit_events" ADD COLUMN "target_type" text;--> statement-breakpoint
ALTER TABLE "audit_events" ADD COLUMN "target_label" text;--> statement-breakpoint
ALTER TABLE "audit_events" ADD COLUMN "changes" jsonb;