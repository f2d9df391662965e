-- Payment callbacks that arrive together, stored together: one statement and
-- one commit for all of them instead of one each (src/payments/notification-store.ts). Each call
-- is receive_payment_notification's arguments, in its order, as a JSON array; the calls run one
-- after another in the order given, each seeing what the ones before it stored, and item says
-- which call a row answers (none when the invoice does not exist). jsonb, not json: json would be
-- parsed again for each argument taken from it.
CREATE OR REPLACE FUNCTION receive_payment_notifications(p_calls jsonb)
RETURNS TABLE (item integer, tenant_id uuid, amount text, currency text, known boolean, stored boolean)
LANGUAGE plpgsql AS $$
DECLARE
  args jsonb;
  call_index integer := 0;
BEGIN
  FOR args IN SELECT value FROM jsonb_array_elements(p_calls) LOOP
    RETURN QUERY SELECT call_index, received.* FROM receive_payment_notification(
      (args->>0)::uuid, (args->>1)::uuid, args->>2, args->>3, args->>4, (args->>5)::boolean,
      (args->>6)::numeric, args->>7, (args->>8)::jsonb, args->>9, args->>10) received;
    call_index := call_index + 1;
  END LOOP;
END;
$$;
