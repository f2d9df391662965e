// The payment requests of invoices that the retention prune deletes (src/maintenance/retention.ts).
// The one place the prune learns how payment requests are kept: rows of payment_requests, which
// go with their invoice by the foreign key's cascade.
import { type RunStatement, statement } from '../db/statements.js';

/**
 * Locks the requests of the invoices `$1` that no other transaction holds (a take skips them from
 * then on); the state of each, `held` for one another transaction has locked: an attempt being
 * recorded, which locks the invoice after its request and would deadlock with a wait here.
 */
const LOCK_REQUESTS = statement<[invoiceIds: string[]], { invoice_id: string; state: string }>(
  `with locked as (
     select invoice_id, state from payment_requests where invoice_id = any($1::uuid[]) for update skip locked
   )
   select r.invoice_id, coalesce(l.state, 'held') as state
     from payment_requests r left join locked l using (invoice_id)
    where r.invoice_id = any($1::uuid[])`,
);

/**
 * Lets go the payment requests of `invoiceIds`, called in the transaction that has locked those
 * invoices and then deletes them: locks their rows (a take that took one first has committed), and
 * answers the invoices whose request is in flight or held by another transaction. Those must stay
 * until a later prune, or the attempt under way could not be recorded.
 */
export async function releasePaymentRequests(run: RunStatement, invoiceIds: string[]): Promise<Set<string>> {
  const rows = await run(LOCK_REQUESTS, [invoiceIds]);
  return new Set(rows.filter((row) => row.state === 'taken' || row.state === 'held').map((row) => row.invoice_id));
}
