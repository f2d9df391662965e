CREATE TABLE "operators" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"role" text NOT NULL,
	"digest" text NOT NULL,
	"hint" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone,
	CONSTRAINT "operators_digest_unique" UNIQUE("digest")
);
--> statement-breakpoint
ALTER TABLE "audit_events" ADD COLUMN "operator_id" uuid;--> statement-breakpoint
ALTER TABLE "audit_events" ADD COLUMN "operator_name" text;--> statement-breakpoint
ALTER TABLE "console_sessions" ADD COLUMN "operator_id" uuid;--> statement-breakpoint
CREATE UNIQUE INDEX "operators_name_live_idx" ON "operators" USING btree ("name") WHERE deleted_at is null;--> statement-breakpoint
CREATE INDEX "audit_events_operator_occurred_idx" ON "audit_events" USING btree ("operator_id","occurred_at","id");--> statement-breakpoint
-- hand-written below
-- Every process caches resolved operator tokens (src/operators/operators.ts): a role change or a
-- deletion reaches the other processes as a NOTIFY, as for credentials (0002).
CREATE TRIGGER operators_changed AFTER UPDATE OR DELETE OR TRUNCATE ON operators FOR EACH STATEMENT EXECUTE FUNCTION notify_cache_invalidation();
