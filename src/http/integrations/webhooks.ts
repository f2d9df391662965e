// What the service sends partners, for the integrations document's `webhooks` section: the
// payment request and the ping, their Standard Webhooks headers, and what we read of the reply.
import { Type } from '@sinclair/typebox';
import { DEFAULT_RETRY_POLICY, REQUEST_TIMEOUT_MS } from '../../payments/index.js';
import { EXAMPLE_UUID } from '../openapi.js';
import { Nullable, Timestamp, Uuid } from '../schemas.js';

const EXAMPLE_TIMESTAMP = 1768469400;

const header = (description: string, example: string) => ({
  in: 'header' as const,
  required: true,
  description,
  schema: { type: 'string' as const },
  example,
});

const SIGNATURE_HEADERS = [
  {
    name: 'webhook-id',
    ...header(
      'Message id: `msg_<invoice_id>` on every attempt of a payment request (deduplicate on it); `msg_ping_<uuid>` for a ping',
      `msg_${EXAMPLE_UUID}`,
    ),
  },
  {
    name: 'webhook-timestamp',
    ...header(
      'Unix seconds when this attempt was signed; refuse it when more than 5 minutes off your clock',
      String(EXAMPLE_TIMESTAMP),
    ),
  },
  {
    name: 'webhook-signature',
    ...header(
      'Space-separated `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<raw body>">`, one per active ' +
        'signing secret, keyed with the bytes the base64 after `whsec_` decodes to (not that text): accept the ' +
        'request when any one matches, compared in constant time. ' +
        'The Standard Webhooks libraries (`standardwebhooks` on npm and PyPI) do all of this.',
      'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
    ),
  },
];

const PaymentRequested = Type.Object(
  {
    type: Type.Literal('payment.requested'),
    invoice_id: Uuid,
    amount: Type.String({ description: "Decimal string with the currency's minor-unit places" }),
    currency: Type.String({ description: 'ISO 4217 code' }),
    gateway: Type.String({ description: "The tenant's gateway: report it back unchanged in the callback" }),
    trip_id: Nullable(Uuid),
    notify_url: Type.String({ format: 'uri', description: 'Where to POST the outcome (the payment callback)' }),
    created_at: Timestamp,
    livemode: Type.Boolean({
      description: 'true for a live invoice, false for a test one (made with a test credential)',
    }),
  },
  {
    examples: [
      {
        type: 'payment.requested',
        invoice_id: EXAMPLE_UUID,
        amount: '100.00',
        currency: 'SAR',
        gateway: 'tap',
        trip_id: null,
        notify_url: 'https://partners.example.com/api/v1/payments/notify/',
        created_at: '2026-01-15T09:30:00.000Z',
        livemode: true,
      },
    ],
  },
);

const Ping = Type.Object(
  { type: Type.Literal('ping'), tenant_id: Uuid, created_at: Timestamp },
  { examples: [{ type: 'ping', tenant_id: EXAMPLE_UUID, created_at: '2026-01-15T09:30:00.000Z' }] },
);

const Reply = Type.Object(
  {
    payment_url: Type.Optional(
      Type.String({
        format: 'uri',
        description: 'Where the traveller pays (http or https, at most 2,000 characters); stored on the invoice',
      }),
    ),
  },
  { examples: [{ payment_url: 'https://pay.acme.example/session/8f2c1a' }] },
);

const RETRY = DEFAULT_RETRY_POLICY;
const RETRIED = {
  description:
    `408, 429 (after \`Retry-After\`) and 5xx, like network errors and timeouts (${REQUEST_TIMEOUT_MS / 1000} s), are retried with the same ` +
    `\`webhook-id\` after ${RETRY.baseSeconds} s × 2^(n-1) by default, at most ${RETRY.maxDelaySeconds / 3600} h apart, ` +
    `until ${RETRY.giveUpAfterSeconds / 3600} h after the invoice was created, and ` +
    'until you report an outcome.',
};
const FINAL = { description: 'Any other 4xx, and any redirect, is final: no retry.' };

export const WEBHOOKS = {
  'payment.requested': {
    post: {
      operationId: 'paymentRequested',
      summary: "We ask your payment endpoint to collect an invoice's payment",
      description:
        "POSTed to the tenant's payment endpoint when an invoice is created. Verify the signature, start the " +
        'payment, answer 2xx (optionally with `payment_url`), then report the outcome to `notify_url` with your ' +
        'partner API key.',
      tags: ['payments'],
      security: [],
      parameters: SIGNATURE_HEADERS,
      requestBody: { required: true, content: { 'application/json': { schema: PaymentRequested } } },
      responses: {
        200: {
          description: 'Accepted. A JSON body with `payment_url` stores it on the invoice; any other body is ignored.',
          content: { 'application/json': { schema: Reply } },
        },
        400: FINAL,
        503: RETRIED,
      },
    },
  },
  ping: {
    post: {
      operationId: 'ping',
      summary: 'An operator tests your payment endpoint',
      description:
        'Sent on demand (`partnerctl tenants ping`), with the same headers and secrets as a payment request. ' +
        'Verify it like one and answer 2xx; the body of the reply is not read.',
      tags: ['payments'],
      security: [],
      parameters: SIGNATURE_HEADERS,
      requestBody: { required: true, content: { 'application/json': { schema: Ping } } },
      responses: { 200: { description: 'The endpoint works and verified the signature' } },
    },
  },
};
