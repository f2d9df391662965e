// partnerctl commands for invoices, their payment events and delivery attempts.
import { type Command, listQuery, PAGING_OPTIONS, positional, required } from '../command.js';
import { pageText, type Row, record, table } from '../output.js';

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
const INVOICE_COLUMNS = [
  'created_at',
  'id',
  'tenant_id',
  'mode',
  'amount',
  'currency',
  'status',
  'possible_double_charge',
];
const DELIVERY_COLUMNS = ['attempt', 'attempted_at', 'http_status', 'latency_ms', 'error', 'next_retry_at'];

/** What an attempt sent (`deliveries[].request` of GET /admin/v1/invoices/{id}). */
interface SentRequest {
  url: string;
  webhook_id: string;
  webhook_timestamp: number;
  body: string;
}

/** The last attempt's request as sent, the body exactly as signed; what a partner compares with. */
function lastRequestSent(deliveries: Row[]): string {
  const sent = deliveries.filter((delivery) => delivery.request).at(-1);
  if (!sent) return 'last request sent: none';
  const request = sent.request as SentRequest;
  return [
    `last request sent (attempt ${sent.attempt}):`,
    `POST ${request.url}`,
    `webhook-id: ${request.webhook_id}`,
    `webhook-timestamp: ${request.webhook_timestamp}`,
    request.body,
  ].join('\n');
}

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
    name: 'invoices list',
    summary: 'List invoices of every tenant, newest first, both modes unless --mode is given',
    usage:
      '[--tenant TENANT_ID] [--status pending|failed|paid|refunded] [--mode live|test] [--since ISO-TIME] ' +
      '[--possible-double-charge] [--limit N] [--offset N]',
    options: {
      tenant: { type: 'string' },
      status: { type: 'string' },
      mode: { type: 'string' },
      since: { type: 'string' },
      'possible-double-charge': { type: 'boolean' },
      ...PAGING_OPTIONS,
    },
    async run(invocation) {
      const { options } = invocation;
      const query = listQuery(options, {
        tenant_id: options.tenant,
        status: options.status,
        mode: options.mode,
        since: options.since,
        possible_double_charge: options['possible-double-charge'] === true ? 'true' : undefined,
      });
      const page = await invocation
        .admin()
        .request<{ results: Row[]; count: number; next: string | null }>('GET', `/invoices?${query}`);
      invocation.output(pageText(page, INVOICE_COLUMNS), page);
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
        lastRequestSent(shown.deliveries),
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
