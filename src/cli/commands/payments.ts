// partnerctl commands for invoices, their payment events and delivery attempts.
import { type Command, positional, required } from '../command.js';
import { type Row, record, table } from '../output.js';

const EVENT_COLUMNS = [
  'received_at',
  'transaction_id',
  'status',
  'gateway',
  'applied',
  'not_applied_reason',
  'status_before',
  'status_after',
];
const DELIVERY_COLUMNS = ['attempt', 'attempted_at', 'http_status', 'latency_ms', 'error', 'next_retry_at'];

export const paymentCommands: Command[] = [
  {
    name: 'invoices create',
    summary: "Create an invoice; its payment request is sent to the tenant's payment endpoint",
    usage: '--tenant TENANT_ID --amount 100.00 --currency SAR [--trip TRIP_ID] [--idempotency-key KEY]',
    options: {
      tenant: { type: 'string' },
      amount: { type: 'string' },
      currency: { type: 'string' },
      trip: { type: 'string' },
      'idempotency-key': { type: 'string' },
    },
    async run(invocation) {
      const { options } = invocation;
      const key = options['idempotency-key'];
      const body = {
        tenant_id: required(options, 'tenant'),
        amount: required(options, 'amount'),
        currency: required(options, 'currency'),
        ...(typeof options.trip === 'string' && { trip_id: options.trip }),
      };
      const { invoice } = await invocation
        .admin()
        .request<{ invoice: Row }>(
          'POST',
          '/invoices',
          body,
          typeof key === 'string' ? { 'idempotency-key': key } : {},
        );
      invocation.output(record(invoice), { invoice });
    },
  },
  {
    name: 'invoices show',
    summary: 'Show an invoice, its payment events and its delivery attempts',
    usage: 'INVOICE_ID',
    async run(invocation) {
      const id = positional(invocation, 0, 'invoice id');
      const shown = await invocation
        .admin()
        .request<{ invoice: Row; events: Row[]; deliveries: Row[] }>('GET', `/invoices/${id}`);
      const text = [
        record(shown.invoice),
        `events:\n${table(shown.events, EVENT_COLUMNS)}`,
        `deliveries:\n${table(shown.deliveries, DELIVERY_COLUMNS)}`,
      ].join('\n\n');
      invocation.output(text, shown);
    },
  },
  {
    name: 'invoices resend',
    summary: 'Send the payment request again now (refused once the invoice has an outcome)',
    usage: 'INVOICE_ID',
    async run(invocation) {
      const id = positional(invocation, 0, 'invoice id');
      const queued = await invocation.admin().request<{ attempt: number }>('POST', `/invoices/${id}/payment-requests`);
      invocation.output(`attempt ${queued.attempt} of the payment request queued`, queued);
    },
  },
  {
    name: 'events list',
    summary: 'List the payment notifications stored for an invoice',
    usage: '--invoice INVOICE_ID',
    options: { invoice: { type: 'string' } },
    async run(invocation) {
      const id = required(invocation.options, 'invoice');
      const { events } = await invocation.admin().request<{ events: Row[] }>('GET', `/invoices/${id}`);
      invocation.output(table(events, [...EVENT_COLUMNS, 'request_id']), { events });
    },
  },
];
