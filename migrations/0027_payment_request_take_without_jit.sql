-- The take (migration 0026) without JIT compilation. The planner costs its plan far above
-- jit_above_cost (it cannot see that each endpoint's window lets few rows through), so with JIT
-- on, the server's default, every take compiled its plan first: many times the take's own work,
-- paid after each delivery under the lock every take waits for.
ALTER FUNCTION take_payment_requests_due(integer, integer, text, double precision, double precision, double precision, bigint)
  SET jit = off;
