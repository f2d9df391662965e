-- A take is durable before its requests leave. The take of 0013/0014 committed asynchronously, so
-- that a database crash right after it lost the take while its requests were already on their
-- way: the jobs were taken again after the restart and each request sent twice. A SET clause on
-- the function scopes the body's own `set_config('synchronous_commit', 'off', true)` to the call
-- (PostgreSQL restores a parameter a function's SET clause names when the function returns), so
-- the transaction commits with the session's setting, on, and the client has the rows only once
-- the take is on disk.
ALTER FUNCTION take_payment_requests(text, integer, integer, text, double precision, double precision, bigint)
  SET synchronous_commit = on;
