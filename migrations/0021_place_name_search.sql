-- Finding a place (DECISIONS §11): `search` matches a country's or a city's English or Arabic name
-- whatever its case and accents. Both sides are compared by their search key: NFKC (presentation
-- forms and ligatures as plain letters), unaccent's rules (é e, ß ss, ł l, ’ '), lower case, and
-- the folding Arabic search engines use (Lucene's ArabicNormalizer): hamza or madda on alef and
-- alef wasla as a bare alef, alef maqsura as yeh, teh marbuta as heh, without harakat or tatweel.
--
-- The index holds every piece of two and three characters of each key; a search looks up its own
-- (three-character ones, or its one two-character piece when it is that short) and checks only
-- the rows holding all of them. pg_trgm would do this in C, but under the embedded server's C
-- ctype it finds no trigram in Arabic text (show_trgm('الرياض') is empty), so an Arabic search
-- would read every row.
CREATE EXTENSION IF NOT EXISTS unaccent SCHEMA public;--> statement-breakpoint
CREATE FUNCTION place_name_key(name text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
  RETURN translate(
    regexp_replace(
      lower(public.unaccent('public.unaccent'::regdictionary, normalize(name, NFKC))),
      '[\u0640\u064B-\u065F\u0670]', '', 'g'),
    U&'\0622\0623\0625\0671\0649\0629',
    U&'\0627\0627\0627\0627\064A\0647');--> statement-breakpoint
CREATE FUNCTION place_name_grams(name text) RETURNS text[]
  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
  AS $$
DECLARE
  key constant text := public.place_name_key(name);
  grams text[] := '{}';
BEGIN
  FOR position IN 1 .. length(key) - 1 LOOP
    grams := grams || substr(key, position, 2);
    IF position < length(key) - 1 THEN
      grams := grams || substr(key, position, 3);
    END IF;
  END LOOP;
  RETURN grams;
END $$;--> statement-breakpoint
-- What a name containing `search` holds for sure: the key's three-character pieces, or its one
-- two-character piece; none (every name) when the key is shorter.
CREATE FUNCTION place_search_grams(search text) RETURNS text[]
  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
  AS $$
DECLARE
  key constant text := public.place_name_key(search);
  size constant integer := least(length(key), 3);
  grams text[] := '{}';
BEGIN
  IF size < 2 THEN
    RETURN grams;
  END IF;
  FOR position IN 1 .. length(key) - size + 1 LOOP
    grams := grams || substr(key, position, size);
  END LOOP;
  RETURN grams;
END $$;--> statement-breakpoint
CREATE INDEX "cities_name_grams_idx" ON "cities" USING gin (place_name_grams("name"));--> statement-breakpoint
CREATE INDEX "cities_name_ar_grams_idx" ON "cities" USING gin (place_name_grams("name_ar"));--> statement-breakpoint
CREATE INDEX "countries_name_grams_idx" ON "countries" USING gin (place_name_grams("name"));--> statement-breakpoint
CREATE INDEX "countries_name_ar_grams_idx" ON "countries" USING gin (place_name_grams("name_ar"));
