CREATE TABLE "geo_data_version" (
	"id" integer PRIMARY KEY NOT NULL,
	"version" integer NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "cities_supported_name_id_idx" ON "cities" USING btree ("name","id") WHERE "cities"."supported";--> statement-breakpoint
CREATE INDEX "countries_name_id_idx" ON "countries" USING btree ("name","id");