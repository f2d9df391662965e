-- Every process caches answers read from these tables (src/cache.ts). A change, by any process or
-- by hand, notifies them all once per statement, after the change commits.
CREATE OR REPLACE FUNCTION notify_cache_invalidation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('partner_integrations_changed', TG_TABLE_NAME);
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER tenants_changed AFTER UPDATE OR DELETE OR TRUNCATE ON tenants FOR EACH STATEMENT EXECUTE FUNCTION notify_cache_invalidation();
--> statement-breakpoint
CREATE TRIGGER credentials_changed AFTER UPDATE OR DELETE OR TRUNCATE ON credentials FOR EACH STATEMENT EXECUTE FUNCTION notify_cache_invalidation();
--> statement-breakpoint
CREATE TRIGGER geo_data_version_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON geo_data_version FOR EACH STATEMENT EXECUTE FUNCTION notify_cache_invalidation();
--> statement-breakpoint
CREATE TRIGGER suggested_prompts_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON suggested_prompts FOR EACH STATEMENT EXECUTE FUNCTION notify_cache_invalidation();
--> statement-breakpoint
CREATE TRIGGER default_prompts_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON default_prompts FOR EACH STATEMENT EXECUTE FUNCTION notify_cache_invalidation();
