// Pinging a tenant's payment endpoint: a signed `ping` event, sent now, with the same Standard
// Webhooks headers and secrets as a payment request, so a partner can test its verification
// without waiting for an invoice. Every ping is recorded with the tenant.
import { randomUUID } from 'node:crypto';
import { and, desc, eq } from 'drizzle-orm';
import { type Executor, runIn } from '../db/client.js';
import { endpointPings, tenants } from '../db/schema.js';
import { statement } from '../db/statements.js';
import { conflict, notFound } from '../errors.js';
import { type Mode, paymentEndpointIn, sealedPaymentEndpointSecrets } from '../tenants/index.js';
import { isSuccessStatus, type SigningDependencies, sendSignedMessage } from './delivery/send.js';

export type EndpointPingRow = typeof endpointPings.$inferSelect;

export const NOTHING_TO_PING = 'The tenant has no payment endpoint to ping: set payment_endpoint_url.';
export const NO_TEST_ENDPOINT_TO_PING =
  'The tenant has no test payment endpoint to ping: set test_payment_endpoint_url.';

/** The body of a ping, as the partner receives it. */
export function pingEvent(tenantId: string, createdAt: Date) {
  return { type: 'ping', tenant_id: tenantId, created_at: createdAt.toISOString() };
}

/**
 * Sends a ping now to the tenant's endpoint of `mode` and records how it went. A tenant without
 * that endpoint is a 409 (nothing to ping); anything the endpoint or the network does is an
 * outcome, never an error.
 */
export async function pingPaymentEndpoint(
  deps: SigningDependencies,
  tenantId: string,
  mode: Mode = 'live',
): Promise<EndpointPingRow> {
  const [tenant] = await deps.db.select().from(tenants).where(eq(tenants.id, tenantId));
  if (!tenant) throw notFound('Tenant');
  const endpointUrl = paymentEndpointIn(tenant, mode);
  if (!endpointUrl) throw conflict(mode === 'test' ? NO_TEST_ENDPOINT_TO_PING : NOTHING_TO_PING);
  const webhookId = `msg_ping_${randomUUID()}`;
  const body = JSON.stringify(pingEvent(tenant.id, new Date()));
  const exchange = await sendSignedMessage(
    deps,
    { url: endpointUrl, sealedSecrets: await sealedPaymentEndpointSecrets(deps.db, tenant.id) },
    webhookId,
    body,
    'partner-integrations (ping)',
  );
  const httpStatus = exchange.outcome === 'answered' ? exchange.reply.status : null;
  let error: string | null = null;
  if (exchange.outcome !== 'answered') error = exchange.error;
  else if (!isSuccessStatus(httpStatus)) error = `endpoint answered HTTP ${httpStatus}`;
  const [row] = await deps.db
    .insert(endpointPings)
    .values({
      tenantId: tenant.id,
      endpointUrl,
      mode,
      webhookId,
      httpStatus,
      latencyMs: exchange.outcome === 'not_sent' ? null : exchange.latencyMs,
      error,
    })
    .returning();
  return row;
}

/** The tenant's latest ping (of its endpoint of `mode`, when given), or null when there is none. */
export async function lastPing(db: Executor, tenantId: string, mode?: Mode): Promise<EndpointPingRow | null> {
  const [row] = await db
    .select()
    .from(endpointPings)
    .where(and(eq(endpointPings.tenantId, tenantId), mode ? eq(endpointPings.mode, mode) : undefined))
    .orderBy(desc(endpointPings.pingedAt))
    .limit(1);
  return row ?? null;
}

/**
 * When a message to the tenant's payment endpoints last went out signed: its latest payment
 * request attempt that was sent (`latency_ms` set: not one that could not be) or ping. Every
 * signing secret not revoked signs each message, so this is each one's last use.
 */
export async function lastSignedAt(db: Executor, tenantId: string): Promise<Date | null> {
  const [row] = await runIn(db)(LAST_SIGNED_AT, [tenantId]);
  return row.at ? new Date(row.at) : null;
}

/** Timestamps are read as text on the pool (Drizzle's parsers). */
const LAST_SIGNED_AT = statement<[tenantId: string], { at: string | null }>(`select greatest(
  (select max(d.attempted_at) from payment_deliveries d join invoices i on i.id = d.invoice_id
    where i.tenant_id = $1 and d.latency_ms is not null),
  (select max(p.pinged_at) from endpoint_pings p where p.tenant_id = $1 and p.latency_ms is not null)
) as at`);
