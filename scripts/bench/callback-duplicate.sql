-- One payment callback that repeats a stored event: the statement of callback-unique.sql, for an
-- invoice n whose event with transaction id n is stored already (scenarios.ts), so the call only
-- reads: no lock, no insert, no update. See callback-unique.sql for the parameters.
\set n random(1, :invoices)
select * from receive_payment_notification(
  :tenant::uuid, ('00000000-0000-4000-8000-' || lpad(:n::text, 12, '0'))::uuid, :n::text, :status::text, :gateway::text,
  :store::boolean, :amount::numeric, :currency::text,
  :plans::jsonb, :payload::text, :request_id::text);
