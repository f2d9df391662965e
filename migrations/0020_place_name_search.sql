CREATE INDEX "cities_name_grams_idx" ON "cities" USING gin (place_name_grams("name"));--> statement-breakpoint
CREATE INDEX "cities_name_ar_grams_idx" ON "cities" USING gin (place_name_grams("name_ar"));--> statement-breakpoint
CREATE INDEX "countries_name_grams_idx" ON "countries" USING gin (place_name_grams("name"));--> statement-breakpoint
CREATE INDEX "countries_name_ar_grams_idx" ON "countries" USING gin (place_name_grams("name_ar"));