ALTER TABLE "suggested_prompts" ADD COLUMN "mode" text DEFAULT 'live' NOT NULL;--> statement-breakpoint
ALTER TABLE "trips" ADD COLUMN "mode" text DEFAULT 'live' NOT NULL;--> statement-breakpoint
-- Every trip is live now, and a test invoice names only a test trip: the test invoices made before
-- trips had a mode no longer name the live trip they named, so a test `paid` can never move it.
UPDATE "invoices" SET "trip_id" = NULL WHERE "mode" = 'test' AND "trip_id" IS NOT NULL;
