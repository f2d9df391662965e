// Helpers shared by the payment tests: invoices, trips and notifications through the real routes.

import type { Static } from '@sinclair/typebox';
import type { LightMyRequestResponse } from 'fastify';
import type { components } from '../../clients/typescript/generated/integrations.js';
import { AppError, type ErrorCode } from '../../src/errors.js';
import type { Delivery, Invoice, PaymentEvent, RefusedNotification } from '../../src/http/admin/payments.js';
import {
  type CallbackResult,
  type NotificationStore,
  parseNotification,
  processNotification,
} from '../../src/payments/index.js';
import type { TenantRow } from '../../src/tenants/index.js';
import type { TestApps, TestTenant } from '../support/apps.js';

export const CALLBACK_PATH = '/api/v1/payments/notify/';

/** An invoice as the admin API shows it. */
export type InvoiceJson = Static<typeof Invoice>;
/** A trip as both APIs show it. */
export type TripJson = components['schemas']['Trip'];

export async function createInvoice(
  service: TestApps,
  tenant: TestTenant,
  fields: { amount?: string; currency?: string; trip_id?: string } = {},
): Promise<InvoiceJson> {
  const response = await service.admin('POST', '/invoices', {
    tenant_id: tenant.tenant.id,
    amount: '100.00',
    currency: 'SAR',
    ...fields,
  });
  if (response.statusCode !== 201) throw new Error(`invoice not created: ${response.statusCode} ${response.body}`);
  return response.json<{ invoice: InvoiceJson }>().invoice;
}

export async function createTrip(service: TestApps, tenant: TestTenant, mode?: 'live' | 'test'): Promise<TripJson> {
  const response = await service.admin('POST', '/trips', {
    tenant_id: tenant.tenant.id,
    title: 'Umrah and AlUla',
    ...(mode && { mode }),
  });
  if (response.statusCode !== 201) throw new Error(`trip not created: ${response.statusCode} ${response.body}`);
  return response.json<{ trip: TripJson }>().trip;
}

export async function tripStatus(service: TestApps, tripId: string): Promise<string> {
  return (await service.admin('GET', `/trips/${tripId}`)).json<{ trip: TripJson }>().trip.status;
}

export async function showInvoice(service: TestApps, invoiceId: string) {
  const response = await service.admin('GET', `/invoices/${invoiceId}`);
  if (response.statusCode !== 200) throw new Error(`invoice not shown: ${response.statusCode} ${response.body}`);
  return { ...response.json(), raw: response.body } as {
    invoice: InvoiceJson;
    events: Static<typeof PaymentEvent>[];
    refused_notifications: Static<typeof RefusedNotification>[];
    deliveries: Static<typeof Delivery>[];
    raw: string;
  };
}

/** A valid notification for `invoice`; override or drop (undefined) fields as a test needs. */
export function notificationFor(invoice: InvoiceJson, fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    invoice_id: invoice.id,
    transaction_id: `txn_${Math.random().toString(36).slice(2)}`,
    status: 'paid',
    amount: invoice.amount,
    currency: invoice.currency,
    gateway: 'tap',
    ...fields,
  };
}

/** POSTs to the callback in-process; a string body is sent as is, anything else as JSON. */
export function notify(
  service: TestApps,
  body: unknown,
  headers: Record<string, string>,
  path = CALLBACK_PATH,
): Promise<LightMyRequestResponse> {
  return service.apps.integrations!.inject({
    method: 'POST',
    url: path,
    headers: { 'content-type': 'application/json', ...headers },
    ...(body !== undefined && { payload: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
}

export const keyOf = (tenant: TestTenant) => ({ 'x-api-key': tenant.credentials.partner_api_key });

/** What the rule answered: its result, or the code of the AppError it refused with and the field that names. */
export type RuleAnswer = CallbackResult | { refused: ErrorCode; field?: string };

/**
 * Steps 2 to 10 as the callback route runs them for `tenant`'s live key (the body's schema, then
 * processNotification), the body sent as JSON text `payloadJson`.
 */
export async function receiveNotification(
  store: NotificationStore,
  tenant: TestTenant,
  body: Record<string, unknown>,
  payloadJson = JSON.stringify(body),
): Promise<RuleAnswer> {
  try {
    return await processNotification(store, {
      tenant: tenant.tenant as unknown as TenantRow,
      mode: 'live',
      notification: parseNotification(body),
      payloadJson,
      requestId: `req-${Math.random()}`,
    });
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    const field = error.details?.[0]?.field;
    return { refused: error.code, ...(field && { field }) };
  }
}

/**
 * pg-boss's job table as release 1.0.0 has it (the columns the move reads), for its jobs: a test
 * database is made by this code, which has no pg-boss.
 */
export const PGBOSS_JOB_TABLE = `
  create schema if not exists pgboss;
  do $$ begin
    create type pgboss.job_state as enum ('created', 'retry', 'active', 'completed', 'cancelled', 'failed');
  exception when duplicate_object then null; end $$;
  create table if not exists pgboss.job (
    id uuid primary key default gen_random_uuid(), name text not null, data jsonb,
    state pgboss.job_state not null default 'created', start_after timestamptz not null default now(),
    started_on timestamptz, created_on timestamptz not null default now(), output jsonb)`;
