// The payment requests of invoices that the retention prune deletes (src/maintenance/retention.ts).
// The one place the prune learns where payment requests are kept: the pg-boss queue's jobs, which
// name their invoice in their data and have no foreign key to it.
import type { DatabaseHandle, Transaction } from '../db/client.js';
import { PAYMENT_REQUEST_QUEUE } from './queue.js';

/**
 * Lets go the payment requests of `invoiceIds`, called in the transaction that has locked those
 * invoices and then deletes them: deletes the requests waiting (a take already blocked on one then
 * finds it gone), and answers the invoices whose request is in flight. Those must stay until a
 * later prune, or the attempt under way could not be recorded. The waiting ones go first: the
 * second statement's snapshot then sees every take of them that committed before.
 */
export async function releasePaymentRequests(
  database: DatabaseHandle,
  tx: Transaction,
  invoiceIds: string[],
): Promise<Set<string>> {
  // Waiting jobs are found through the take's index on their endpoint (queue.ts, TAKE_INDEXES).
  await database.executeSql(
    `delete from pgboss.job j
      using (select distinct tenant_id::text as tenant_id, mode from invoices where id = any($2::uuid[])) endpoint
      where j.name = $1 and j.state < 'active'
        and j.data->>'tenant_id' = endpoint.tenant_id and j.data->>'mode' = endpoint.mode
        and j.data->>'invoice_id' = any($2::text[])`,
    [PAYMENT_REQUEST_QUEUE, invoiceIds],
    tx,
  );
  const { rows } = await database.executeSql<{ invoice_id: string }>(
    `select distinct j.data->>'invoice_id' as invoice_id from pgboss.job j
      where j.name = $1 and j.state = 'active' and j.data->>'invoice_id' = any($2::text[])`,
    [PAYMENT_REQUEST_QUEUE, invoiceIds],
    tx,
  );
  return new Set(rows.map((row) => row.invoice_id));
}
