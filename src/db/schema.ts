// The one database schema. Generate migrations with
// `npm run db:generate` after changing it.
import { sql } from 'drizzle-orm';
import {
  type AnyPgColumn,
  bigint,
  boolean,
  customType,
  date,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';

const id = () => uuid('id').primaryKey().defaultRandom();
const createdAt = () => timestamp('created_at', { withTimezone: true }).notNull().defaultNow();
const updatedAt = () => timestamp('updated_at', { withTimezone: true }).notNull().defaultNow();

/** `numeric` kept as its decimal text: money never passes through a float. */
const decimalText = customType<{ data: string; driverData: string }>({
  dataType: () => 'numeric',
});

export const tenants = pgTable('tenants', {
  id: id(),
  slug: text('slug').notNull().unique(),
  name: text('name').notNull(),
  isActive: boolean('is_active').notNull().default(true),
  gateway: text('gateway').notNull(),
  paymentEndpointUrl: text('payment_endpoint_url'),
  /** Where test invoices' payment requests go (test mode, src/payments/modes.ts). */
  testPaymentEndpointUrl: text('test_payment_endpoint_url'),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
});

export type TenantRow = typeof tenants.$inferSelect;

/**
 * Every issued secret. Only the SHA-256 digest of the secret is kept, except for the payment
 * endpoint secret: the service must sign with it, so it is kept encrypted (`sealedSecret`).
 * `tenantId` is null for platform-wide backend partner keys.
 */
export const credentials = pgTable(
  'credentials',
  {
    id: id(),
    tenantId: uuid('tenant_id').references(() => tenants.id, { onDelete: 'cascade' }),
    kind: text('kind').notNull(),
    digest: text('digest').notNull(),
    hint: text('hint').notNull(),
    sealedSecret: text('sealed_secret'),
    name: text('name'),
    scopes: text('scopes').array().notNull().default(sql`'{}'::text[]`),
    createdAt: createdAt(),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
  },
  (table) => [
    uniqueIndex('credentials_digest_key').on(table.digest),
    index('credentials_tenant_kind_idx').on(table.tenantId, table.kind),
  ],
);

/**
 * When each credential was last presented, to the minute. A table of its own: an update of
 * `credentials` notifies every process to drop its caches, which this write must not do.
 */
export const credentialUsage = pgTable('credential_usage', {
  credentialId: uuid('credential_id')
    .primaryKey()
    .references(() => credentials.id, { onDelete: 'cascade' }),
  lastUsedAt: timestamp('last_used_at', { withTimezone: true }).notNull(),
});

/** Operators' console sessions; the cookie carries the token, only its digest is kept. */
export const consoleSessions = pgTable('console_sessions', {
  id: id(),
  digest: text('digest').notNull().unique(),
  createdAt: createdAt(),
  expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  /** The named operator signed in; null: the bootstrap ADMIN_TOKEN. */
  operatorId: uuid('operator_id'),
});

/**
 * A `search` over place names (DECISIONS §11) looks up the pieces of two and three characters of
 * each name's search key (`place_name_grams`, migrations/0021_place_name_search.sql) in a GIN index,
 * then checks the few rows found; the English and the Arabic name have one each.
 */
const placeNameSearchIndexes = (tableName: string, table: { name: AnyPgColumn; nameAr: AnyPgColumn }) => [
  index(`${tableName}_name_grams_idx`).using('gin', sql`place_name_grams(${table.name})`),
  index(`${tableName}_name_ar_grams_idx`).using('gin', sql`place_name_grams(${table.nameAr})`),
];

/**
 * One-time sign-in links of the partner portal (src/tenants/portal.ts): only the token's digest is
 * kept; a link opens one session, once, before it expires.
 */
export const portalLinks = pgTable(
  'portal_links',
  {
    id: id(),
    digest: text('digest').notNull().unique(),
    tenantId: uuid('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    mode: text('mode').$type<'live' | 'test'>().notNull(),
    /** `read` or `write`. */
    access: text('access').$type<'read' | 'write'>().notNull(),
    /** The language the link asks for (`en`, `ar`); null: the browser's. */
    language: text('language'),
    /** Who asked for it: the tenant's SSO secret (its hint) or an operator. */
    issuedBy: text('issued_by').notNull(),
    /** The SSO secret that asked for it: revoking the secret ends the link and its sessions. */
    credentialId: uuid('credential_id').references(() => credentials.id, { onDelete: 'cascade' }),
    /** The operator who asked for it (null: the admin token): deleting the operator ends them. */
    operatorId: uuid('operator_id').references(() => operators.id, { onDelete: 'cascade' }),
    createdAt: createdAt(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    usedAt: timestamp('used_at', { withTimezone: true }),
  },
  (table) => [index('portal_links_expires_idx').on(table.expiresAt)],
);

/**
 * Partner portal sessions, each opened by a link, whose tenant, mode, access and language it has;
 * the cookie carries the token, only its digest is kept.
 */
export const portalSessions = pgTable(
  'portal_sessions',
  {
    id: id(),
    digest: text('digest').notNull().unique(),
    linkId: uuid('link_id')
      .notNull()
      .references(() => portalLinks.id, { onDelete: 'cascade' }),
    createdAt: createdAt(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (table) => [
    index('portal_sessions_expires_idx').on(table.expiresAt),
    index('portal_sessions_link_idx').on(table.linkId),
  ],
);

export const countries = pgTable(
  'countries',
  {
    id: id(),
    code: text('code').notNull().unique(),
    name: text('name').notNull(),
    nameAr: text('name_ar'),
    phoneCode: text('phone_code').notNull(),
    supported: boolean('supported').notNull().default(false),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (table) => [index('countries_name_id_idx').on(table.name, table.id), ...placeNameSearchIndexes('countries', table)],
);

export const cities = pgTable(
  'cities',
  {
    id: id(),
    geonamesId: integer('geonames_id').unique(),
    countryId: uuid('country_id')
      .notNull()
      .references(() => countries.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    nameAr: text('name_ar'),
    longitude: doublePrecision('longitude').notNull(),
    latitude: doublePrecision('latitude').notNull(),
    capital: text('capital').notNull().default(''),
    population: integer('population').notNull().default(0),
    images: text('images').array().notNull().default(sql`'{}'::text[]`),
    supported: boolean('supported').notNull().default(false),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (table) => [
    index('cities_name_id_idx').on(table.name, table.id),
    index('cities_country_name_id_idx').on(table.countryId, table.name, table.id),
    // `has_attractions=true` lists only supported cities: a small partial index in list order.
    index('cities_supported_name_id_idx').on(table.name, table.id).where(sql`${table.supported}`),
    ...placeNameSearchIndexes('cities', table),
  ],
);

export const attractions = pgTable(
  'attractions',
  {
    id: id(),
    cityId: uuid('city_id')
      .notNull()
      .references(() => cities.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    createdAt: createdAt(),
  },
  (table) => [index('attractions_city_idx').on(table.cityId)],
);

/**
 * One row (id 1) whose `version` goes up in every transaction that changes countries, cities or
 * attractions, so listings can cache counts and answer ETags per version across processes.
 */
export const geoDataVersion = pgTable('geo_data_version', {
  id: integer('id').primaryKey(),
  version: integer('version').notNull(),
  updatedAt: updatedAt(),
});

export const trips = pgTable(
  'trips',
  {
    id: id(),
    tenantId: uuid('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    title: text('title').notNull(),
    status: text('status').notNull().default('draft'),
    startDate: date('start_date'),
    endDate: date('end_date'),
    travelers: jsonb('travelers').notNull(),
    destinations: jsonb('destinations').notNull(),
    itinerary: jsonb('itinerary').notNull(),
    /** `live`, or `test` for one an operator made for a tenant's test mode: a credential sees only its own mode's. */
    mode: text('mode').$type<'live' | 'test'>().notNull().default('live'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (table) => [index('trips_tenant_idx').on(table.tenantId)],
);

export const suggestedPrompts = pgTable(
  'suggested_prompts',
  {
    id: id(),
    tenantId: uuid('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    language: text('language').notNull(),
    text: text('text').notNull(),
    sortOrder: integer('sort_order').notNull().default(0),
    isActive: boolean('is_active').notNull().default(true),
    /** `live`, or `test` for one made with a test SSO secret: the two sets never mix. */
    mode: text('mode').$type<'live' | 'test'>().notNull().default('live'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (table) => [index('suggested_prompts_tenant_language_idx').on(table.tenantId, table.language, table.sortOrder)],
);

export const defaultPrompts = pgTable(
  'default_prompts',
  {
    id: id(),
    language: text('language').notNull(),
    text: text('text').notNull(),
    sortOrder: integer('sort_order').notNull().default(0),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (table) => [index('default_prompts_language_idx').on(table.language, table.sortOrder)],
);

export const invoices = pgTable(
  'invoices',
  {
    id: id(),
    tenantId: uuid('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    tripId: uuid('trip_id').references(() => trips.id, { onDelete: 'set null' }),
    amount: decimalText('amount').notNull(),
    currency: text('currency').notNull(),
    status: text('status').notNull().default('pending'),
    gatewayReference: text('gateway_reference'),
    paidAt: timestamp('paid_at', { withTimezone: true }),
    paymentUrl: text('payment_url'),
    /** `live`, or `test` for an invoice made with test credentials: the two never mix. */
    mode: text('mode').$type<'live' | 'test'>().notNull().default('live'),
    /**
     * A `paid` under another transaction_id came after the invoice was paid: the traveller may have
     * paid twice. Stored, not applied (src/payments/notification.ts, planTransition).
     */
    possibleDoubleCharge: boolean('possible_double_charge').notNull().default(false),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (table) => [
    index('invoices_tenant_idx').on(table.tenantId),
    // A partner's own payment requests, newest first, in one mode.
    index('invoices_tenant_mode_created_idx').on(table.tenantId, table.mode, table.createdAt, table.id),
    index('invoices_trip_idx').on(table.tripId, table.createdAt),
    // The console's invoice list: newest first.
    index('invoices_created_idx').on(table.createdAt, table.id),
    // The console's possible double charges: few, found without reading the others.
    index('invoices_possible_double_charge_idx')
      .on(table.createdAt, table.id)
      .where(sql`${table.possibleDoubleCharge}`),
  ],
);

/** Accepted payment notifications: the audit trail and the idempotency record. */
export const paymentEvents = pgTable(
  'payment_events',
  {
    id: id(),
    tenantId: uuid('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    invoiceId: uuid('invoice_id')
      .notNull()
      .references(() => invoices.id, { onDelete: 'cascade' }),
    transactionId: text('transaction_id').notNull(),
    status: text('status').notNull(),
    gateway: text('gateway').notNull(),
    /** The invoice's, and so the key's: a tuple sent in one mode is not a duplicate in the other. */
    mode: text('mode').$type<'live' | 'test'>().notNull(),
    payload: jsonb('payload').notNull(),
    applied: boolean('applied').notNull(),
    /**
     * Why it did not move the invoice (`NotAppliedReason`); null when applied, and on events of
     * release 1.0.0, whose reason is read from their status.
     */
    notAppliedReason: text('not_applied_reason'),
    statusBefore: text('status_before').notNull(),
    statusAfter: text('status_after').notNull(),
    requestId: text('request_id'),
    receivedAt: timestamp('received_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [
    // Also the admin search's index by (tenant, transaction_id): mode comes last.
    uniqueIndex('payment_events_mode_dedupe_key').on(
      table.tenantId,
      table.transactionId,
      table.status,
      table.gateway,
      table.mode,
    ),
    index('payment_events_invoice_idx').on(table.invoiceId, table.receivedAt),
    // The console's charts: the last 24 hours.
    index('payment_events_received_idx').on(table.receivedAt),
  ],
);

/** One row per attempt to call the tenant's payment endpoint for an invoice. */
export const paymentDeliveries = pgTable(
  'payment_deliveries',
  {
    id: id(),
    invoiceId: uuid('invoice_id')
      .notNull()
      .references(() => invoices.id, { onDelete: 'cascade' }),
    attempt: integer('attempt').notNull(),
    attemptedAt: timestamp('attempted_at', { withTimezone: true }).notNull().defaultNow(),
    httpStatus: integer('http_status'),
    latencyMs: integer('latency_ms'),
    error: text('error'),
    /** The start of the endpoint's reply body (RESPONSE_BODY_MAX_BYTES). */
    responseBody: text('response_body'),
    /**
     * What the attempt sent, for operators to read beside the reply: the URL, its
     * `webhook-timestamp` (Unix seconds) and the body as signed. Null when nothing was sent, and for
     * attempts recorded before these were kept.
     */
    requestUrl: text('request_url'),
    webhookTimestamp: bigint('webhook_timestamp', { mode: 'number' }),
    requestBody: text('request_body'),
    /** When the next attempt is due; null when this one was the last. */
    nextRetryAt: timestamp('next_retry_at', { withTimezone: true }),
  },
  (table) => [
    index('payment_deliveries_invoice_idx').on(table.invoiceId, table.attemptedAt),
    index('payment_deliveries_attempted_idx').on(table.attemptedAt),
  ],
);

export type CountryRow = typeof countries.$inferSelect;
export type CityRow = typeof cities.$inferSelect;
export type AttractionRow = typeof attractions.$inferSelect;

/**
 * Operators' changes (admin API, partnerctl): who, what, when, from where, on what. Never a
 * secret: the body's field names are kept, not their values.
 */
export const auditEvents = pgTable(
  'audit_events',
  {
    id: id(),
    // The clock at the insert, not the transaction's start: events of one request keep their order.
    occurredAt: timestamp('occurred_at', { withTimezone: true }).notNull().default(sql`clock_timestamp()`),
    actor: text('actor').notNull(),
    action: text('action').notNull(),
    targetId: text('target_id'),
    fields: text('fields').array().notNull().default(sql`'{}'::text[]`),
    status: integer('status'),
    address: text('address'),
    requestId: text('request_id'),
    /** The named operator who made the change; null: the bootstrap ADMIN_TOKEN, or no operator. */
    operatorId: uuid('operator_id'),
    /** The operator's name when the change was made (operators are renamed and deleted). */
    operatorName: text('operator_name'),
    /** Method and route template it was made through (`action` names it the same way on every route). */
    route: text('route'),
    /** The change in words, e.g. `Deactivated tenant Acme Travel`, as it read when made. */
    summary: text('summary'),
    /** What the target is (`tenant`, `operator`...) and its name when the change was made. */
    targetType: text('target_type'),
    targetLabel: text('target_label'),
    /** The values that changed: `[{field, before, after}]`, secrets never among them. */
    changes: jsonb('changes'),
  },
  (table) => [
    index('audit_events_occurred_idx').on(table.occurredAt, table.id),
    index('audit_events_target_occurred_idx').on(table.targetId, table.occurredAt, table.id),
    index('audit_events_operator_occurred_idx').on(table.operatorId, table.occurredAt, table.id),
  ],
);

/** Every ping of a tenant's payment endpoint (`POST /admin/v1/tenants/{id}/payment-endpoint/ping`). */
export const endpointPings = pgTable(
  'endpoint_pings',
  {
    id: id(),
    tenantId: uuid('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    /** The endpoint as it was when pinged: it may change later. */
    endpointUrl: text('endpoint_url'),
    /** Whose endpoint: the live one or the test one (a ping of one mode is not the other's). */
    mode: text('mode').$type<'live' | 'test'>().notNull().default('live'),
    webhookId: text('webhook_id').notNull(),
    pingedAt: timestamp('pinged_at', { withTimezone: true }).notNull().defaultNow(),
    httpStatus: integer('http_status'),
    latencyMs: integer('latency_ms'),
    error: text('error'),
  },
  (table) => [index('endpoint_pings_tenant_idx').on(table.tenantId, table.pingedAt)],
);

/**
 * `Idempotency-Key` of invoice creation: the key, a digest of the request it came with, and the
 * invoice it made. A key is honoured for 24 hours (src/payments/invoices.ts).
 */
export const invoiceIdempotencyKeys = pgTable(
  'invoice_idempotency_keys',
  {
    key: text('key').primaryKey(),
    requestDigest: text('request_digest').notNull(),
    invoiceId: uuid('invoice_id')
      .notNull()
      .references(() => invoices.id, { onDelete: 'cascade' }),
    createdAt: createdAt(),
  },
  // The cascade of an invoice's deletion (the retention prune of test invoices) finds its keys here.
  (table) => [index('invoice_idempotency_keys_invoice_idx').on(table.invoiceId)],
);

/**
 * Named operators of the admin API and console: a person, a role, a token kept as its digest.
 * A deleted operator stays (deleted_at set) so the audit trail keeps naming them.
 */
export const operators = pgTable(
  'operators',
  {
    id: id(),
    name: text('name').notNull(),
    /** `read-only`, `operator` or `admin` (src/operators/roles.ts). */
    role: text('role').notNull(),
    digest: text('digest').notNull().unique(),
    /** The token's prefix and last four characters, to tell tokens apart. */
    hint: text('hint').notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    deletedAt: timestamp('deleted_at', { withTimezone: true }),
  },
  (table) => [uniqueIndex('operators_name_live_idx').on(table.name).where(sql`deleted_at is null`)],
);

/**
 * Payment callbacks of an authenticated tenant that were refused (accepted ones are payment_events),
 * recorded after the answer, off the callback's statement, and pruned (src/payments/refusals.ts).
 */
export const refusedNotifications = pgTable(
  'refused_notifications',
  {
    id: id(),
    tenantId: uuid('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    /** The mode of the key that sent it. */
    mode: text('mode').$type<'live' | 'test'>().notNull(),
    /** The invoice, when the id named one of this tenant in this mode. */
    invoiceId: uuid('invoice_id').references(() => invoices.id, { onDelete: 'cascade' }),
    httpStatus: integer('http_status').notNull(),
    /** The message answered, e.g. `Amount mismatch`. */
    error: text('error').notNull(),
    requestId: text('request_id'),
    receivedAt: timestamp('received_at', { withTimezone: true }).notNull().defaultNow(),
    /** The body as received, cut at REFUSED_PAYLOAD_MAX_BYTES; null when none was read. */
    payload: text('payload'),
    payloadTruncated: boolean('payload_truncated').notNull().default(false),
  },
  (table) => [
    index('refused_notifications_tenant_received_idx').on(table.tenantId, table.receivedAt, table.id),
    index('refused_notifications_invoice_idx').on(table.invoiceId, table.receivedAt),
    index('refused_notifications_received_idx').on(table.receivedAt),
  ],
);

/**
 * The circuit breaker of each tenant's payment endpoint (src/payments/breaker.ts): `closed`
 * (requests flow), `open` (requests wait; one probe at `probe_at`) or `half_open` (the probe is
 * out). A tenant without a row has never failed.
 */
export const paymentEndpointBreakers = pgTable('payment_endpoint_breakers', {
  tenantId: uuid('tenant_id')
    .primaryKey()
    .references(() => tenants.id, { onDelete: 'cascade' }),
  state: text('state').notNull().default('closed'),
  consecutiveFailures: integer('consecutive_failures').notNull().default(0),
  /** The wait before the next probe; doubles with each failed probe. */
  coolDownSeconds: doublePrecision('cool_down_seconds').notNull().default(0),
  probeAt: timestamp('probe_at', { withTimezone: true }),
  lastError: text('last_error'),
  changedAt: timestamp('changed_at', { withTimezone: true }).notNull().defaultNow(),
});

/** Every opening, failed probe and closing of a payment endpoint's breaker. */
export const paymentEndpointBreakerEvents = pgTable(
  'payment_endpoint_breaker_events',
  {
    id: id(),
    tenantId: uuid('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    /** `opened`, `probe_failed` or `closed`. */
    event: text('event').notNull(),
    at: timestamp('at', { withTimezone: true }).notNull().defaultNow(),
    consecutiveFailures: integer('consecutive_failures').notNull(),
    error: text('error'),
  },
  (table) => [index('payment_endpoint_breaker_events_tenant_idx').on(table.tenantId, table.at)],
);

/**
 * Payment request workers and when each last said it was alive (every second): the active jobs of
 * one silent for longer are given back to be made again (src/payments/worker.ts).
 */
export const paymentWorkers = pgTable('payment_workers', {
  id: text('id').primaryKey(),
  seenAt: timestamp('seen_at', { withTimezone: true }).notNull().defaultNow(),
});

/**
 * The payment request of each invoice (src/payments/delivery/): the queue's row and the partner's
 * view of it in one. `waiting` until `due_at`, then `taken` by one worker (`lease_holder`) until
 * `lease_until`, renewed while it runs (a lease that ends makes it due again, same webhook-id); a
 * retry makes it `waiting` again with the next `attempt`; `done` with its `outcome` when no
 * attempt is due. Its attempts are the rows of payment_deliveries.
 */
export const paymentRequests = pgTable(
  'payment_requests',
  {
    invoiceId: uuid('invoice_id')
      .primaryKey()
      .references(() => invoices.id, { onDelete: 'cascade' }),
    // The endpoint it goes to: the tenant's live or test payment endpoint.
    tenantId: uuid('tenant_id')
      .notNull()
      .references(() => tenants.id, { onDelete: 'cascade' }),
    mode: text('mode').$type<'live' | 'test'>().notNull(),
    /** The attempt due next, or the last one made once `done`. */
    attempt: integer('attempt').notNull().default(1),
    state: text('state').$type<'waiting' | 'taken' | 'done'>().notNull().default('waiting'),
    dueAt: timestamp('due_at', { withTimezone: true }).notNull().defaultNow(),
    /** When the attempt due was asked for (the invoice, a retry, a resend): how long it waited. */
    enqueuedAt: timestamp('enqueued_at', { withTimezone: true }).notNull().defaultNow(),
    leaseHolder: text('lease_holder'),
    leaseUntil: timestamp('lease_until', { withTimezone: true }),
    /** `delivered`, `failed` or `skipped` once done. */
    outcome: text('outcome'),
    /**
     * The W3C trace context of the request that created the invoice, while tracing is on: every
     * attempt's span is its child and sends it as `traceparent`, so retries and resends stay in its trace.
     */
    traceparent: text('traceparent'),
  },
  (table) => [
    // The take: each endpoint's waiting requests in due order, and each one's requests in flight.
    index('payment_requests_waiting_idx')
      .on(table.tenantId, table.mode, table.dueAt, table.invoiceId)
      .where(sql`state = 'waiting'`),
    index('payment_requests_taken_idx').on(table.tenantId, table.mode, table.leaseUntil).where(sql`state = 'taken'`),
  ],
);
