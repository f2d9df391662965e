-- One payment callback that stores a new event and moves its invoice: the statement the service
-- sends for a callback that arrives alone (src/payments/notification-store.ts, RECEIVE_STATEMENT),
-- as PostgreSQL logs it (log_statement = all), with the same parameters. Callbacks that arrive
-- together the service stores in one statement (receive_payment_notification_set, one insert and
-- one update for the group, or receive_payment_notifications, which calls this function for each);
-- the ceiling stays one callback a transaction. Two differences, both for
-- pgbench's sake: the invoice id is built from a number (pgbench variables are numbers; the
-- ceiling's own invoices have ids 00000000-0000-4000-8000-<n>), and the transaction id is a random
-- number.
-- Variables from -D (scenarios.ts): tenant, status, gateway, store, amount, currency, plans,
-- payload, request_id, invoices.
\set n random(1, :invoices)
\set txn random(1000000000, 9000000000000000)
select * from receive_payment_notification(
  :tenant::uuid, ('00000000-0000-4000-8000-' || lpad(:n::text, 12, '0'))::uuid, :txn::text, :status::text, :gateway::text,
  :store::boolean, :amount::numeric, :currency::text,
  :plans::jsonb, :payload::text, :request_id::text);
