-- A portal link names what asked for it: the SSO secret, or the operator (the admin token: neither).
-- Revoking that secret, or deleting that operator, ends the link and the sessions it opened: a
-- leaked secret's holder kept an 8-hour session, and unused links, past the revocation. Links
-- made before this migration name neither, and live out their hours as before.
ALTER TABLE "portal_links" ADD COLUMN "credential_id" uuid;--> statement-breakpoint
ALTER TABLE "portal_links" ADD COLUMN "operator_id" uuid;--> statement-breakpoint
ALTER TABLE "portal_links" ADD CONSTRAINT "portal_links_credential_id_credentials_id_fk" FOREIGN KEY ("credential_id") REFERENCES "public"."credentials"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "portal_links" ADD CONSTRAINT "portal_links_operator_id_operators_id_fk" FOREIGN KEY ("operator_id") REFERENCES "public"."operators"("id") ON DELETE cascade ON UPDATE no action;