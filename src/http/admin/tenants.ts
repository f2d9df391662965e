// Admin routes for tenants, their credentials, and backend partner keys (DECISIONS §8).

import { type Static, Type } from '@sinclair/typebox';
import { type AppContext, signingDependencies } from '../../context.js';
import {
  endpointBreaker,
  lastPing,
  NOTHING_TO_PING,
  pingPaymentEndpoint,
  REQUEST_TIMEOUT_MS,
} from '../../payments/index.js';
import {
  BACKEND_SCOPES,
  type CredentialWithUse,
  createTenant,
  getTenant,
  issueCredential,
  issuePartnerKey,
  listCredentials,
  listTenants,
  resealSecrets,
  revokeCredential,
  slugTaken,
  TENANT_CREDENTIAL_KINDS,
  type TenantRow,
  updateTenant,
} from '../../tenants/index.js';
import { route } from '../route.js';
import { IdParams, isoOrNull, Nullable, Timestamp, Uuid } from '../schemas.js';
import { breakerView, EndpointBreaker, Ping, pingView } from '../shapes/payment-request.js';
import { conflictResponse } from './error-responses.js';

export const Tenant = Type.Object({
  id: Uuid,
  slug: Type.String(),
  name: Type.String(),
  gateway: Type.String(),
  is_active: Type.Boolean(),
  payment_endpoint_url: Nullable(Type.String()),
  test_payment_endpoint_url: Nullable(Type.String({ description: "Where test invoices' payment requests go" })),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export function tenantView(row: TenantRow): Static<typeof Tenant> {
  return {
    id: row.id,
    slug: row.slug,
    name: row.name,
    gateway: row.gateway,
    is_active: row.isActive,
    payment_endpoint_url: row.paymentEndpointUrl,
    test_payment_endpoint_url: row.testPaymentEndpointUrl,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

export const Credential = Type.Object({
  id: Uuid,
  kind: Type.String(),
  hint: Type.String({
    description:
      "The secret's prefix and last four characters, to tell secrets apart (earlier ones: its first characters)",
  }),
  name: Nullable(Type.String()),
  scopes: Type.Array(Type.String()),
  tenant_id: Nullable(Uuid),
  created_at: Timestamp,
  revoked_at: Nullable(Timestamp),
  last_used_at: Nullable(
    Type.String({ format: 'date-time', description: 'When it was last presented, to the minute' }),
  ),
});

export function credentialView(row: CredentialWithUse): Static<typeof Credential> {
  return {
    id: row.id,
    kind: row.kind,
    hint: row.hint,
    name: row.name,
    scopes: row.scopes,
    tenant_id: row.tenantId,
    created_at: row.createdAt.toISOString(),
    revoked_at: isoOrNull(row.revokedAt),
    last_used_at: isoOrNull(row.lastUsedAt),
  };
}

const Name = Type.String({ minLength: 1, maxLength: 200 });
const Slug = Type.String({
  pattern: '^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$',
  description: 'Lower-case letters, digits and hyphens; 1 to 63 characters',
});
const EndpointUrl = Nullable(
  Type.String({ maxLength: 2000, description: "http(s) URL of the partner's payment endpoint" }),
);
const Scope = Type.Union(BACKEND_SCOPES.map((scope) => Type.Literal(scope)));

// Request bodies, also what the console's forms are validated against.
const TestEndpointUrl = Nullable(
  Type.String({
    maxLength: 2000,
    description: "http(s) URL of the partner's test payment endpoint: test invoices' payment requests go there",
  }),
);

export const NewTenantBody = Type.Object(
  {
    name: Name,
    slug: Slug,
    gateway: Type.String(),
    payment_endpoint_url: Type.Optional(EndpointUrl),
    test_payment_endpoint_url: Type.Optional(TestEndpointUrl),
  },
  { additionalProperties: false },
);
export const TenantChangesBody = Type.Object(
  {
    name: Type.Optional(Name),
    is_active: Type.Optional(Type.Boolean()),
    gateway: Type.Optional(Type.String()),
    payment_endpoint_url: Type.Optional(EndpointUrl),
    test_payment_endpoint_url: Type.Optional(TestEndpointUrl),
  },
  { additionalProperties: false },
);
export const NewCredentialBody = Type.Object(
  { kind: Type.Union(TENANT_CREDENTIAL_KINDS.map((kind) => Type.Literal(kind))) },
  { additionalProperties: false },
);
export const NewPartnerKeyBody = Type.Object(
  { name: Name, scopes: Type.Array(Scope, { minItems: 1 }), tenant_id: Type.Optional(Nullable(Uuid)) },
  { additionalProperties: false },
);

/** What a tenant's settings are checked against. */
const tenantRules = ({ config }: AppContext) => ({ supportedGateways: config.supportedGateways });
/** How a new signing secret is sealed before it is stored. */
const sealWith =
  ({ secretBox }: AppContext) =>
  (secret: string) =>
    secretBox.seal(secret);

export const adminTenantRoutes = [
  route({
    method: 'POST',
    url: '/tenants',
    schema: {
      operationId: 'createTenant',
      tags: ['tenants'],
      summary: 'Create a tenant with one secret of each kind (shown once)',
      description:
        'With a `test_payment_endpoint_url`, its test SSO secret and test partner key are issued too, ' +
        'so that test invoices can be made and answered at once.',
      body: NewTenantBody,
      response: {
        409: conflictResponse({ 'slug taken': slugTaken('acme') }),

        201: Type.Object({
          tenant: Tenant,
          credentials: Type.Object({
            sso_hmac_secret: Type.String(),
            partner_api_key: Type.String(),
            payment_endpoint_secret: Type.String(),
            test_sso_hmac_secret: Type.Optional(Type.String({ description: 'Only with a test_payment_endpoint_url' })),
            test_partner_api_key: Type.Optional(Type.String({ description: 'Only with a test_payment_endpoint_url' })),
          }),
        }),
      },
    },
    handler: (context) => async (request, reply) => {
      const { tenant, secrets } = await createTenant(context.db, request.body, tenantRules(context), sealWith(context));
      return reply.code(201).send({ tenant: tenantView(tenant), credentials: secrets });
    },
  }),

  route({
    method: 'GET',
    url: '/tenants',
    schema: {
      operationId: 'listTenants',
      summary: 'List tenants, oldest first',
      tags: ['tenants'],
      response: { 200: Type.Object({ tenants: Type.Array(Tenant) }) },
    },
    handler: (context) => async () => ({ tenants: (await listTenants(context.db)).map(tenantView) }),
  }),

  route({
    method: 'GET',
    url: '/tenants/:id',
    config: { resource: 'Tenant' },
    schema: {
      operationId: 'getTenant',
      summary: "A tenant, with its latest payment endpoint ping and its endpoint's circuit breaker",

      tags: ['tenants'],
      params: IdParams,
      response: {
        200: Type.Object({
          tenant: Tenant,
          last_ping: Type.Union([Ping, Type.Null()], {
            description: 'The latest ping kept (RETENTION_PINGS_DAYS); null: none',
          }),
          payment_endpoint_breaker: EndpointBreaker,
        }),
      },
    },
    handler: (context) => async (request) => ({
      tenant: tenantView(await getTenant(context.db, request.params.id)),
      last_ping: await lastPing(context.db, request.params.id).then((row) => row && pingView(row)),
      payment_endpoint_breaker: breakerView(await endpointBreaker(context.db, request.params.id)),
    }),
  }),

  route({
    method: 'POST',
    url: '/tenants/:id/payment-endpoint/ping',
    config: { resource: 'Tenant' },
    schema: {
      operationId: 'pingPaymentEndpoint',
      tags: ['tenants'],
      summary: "Send a signed ping to the tenant's payment endpoint now and report the outcome",
      description:
        'Sends `{"type": "ping", "tenant_id", "created_at"}` with the same Standard Webhooks headers and secrets ' +
        `as a payment request, waits for the answer (${REQUEST_TIMEOUT_MS / 1000} s at most), records it with the tenant and answers it. ` +
        'An endpoint that fails is an outcome (`ok: false`), not an error; a tenant without an endpoint is a 409.',
      params: IdParams,
      response: {
        409: conflictResponse({ 'no endpoint': NOTHING_TO_PING }),
        200: Type.Object({ ping: Ping }),
      },
    },
    handler: (context) => async (request) => ({
      ping: pingView(await pingPaymentEndpoint(signingDependencies(context), request.params.id)),
    }),
  }),

  route({
    method: 'PATCH',
    url: '/tenants/:id',
    config: { resource: 'Tenant' },
    schema: {
      operationId: 'updateTenant',
      tags: ['tenants'],
      summary: 'Change a tenant; is_active false makes all its credentials fail at once',
      params: IdParams,
      body: TenantChangesBody,
      response: { 200: Type.Object({ tenant: Tenant }) },
    },
    handler: (context) => async (request) => ({
      tenant: tenantView(
        await updateTenant(context.db, context.caches, request.params.id, request.body, tenantRules(context)),
      ),
    }),
  }),

  route({
    method: 'GET',
    url: '/tenants/:id/credentials',
    config: { resource: 'Tenant' },
    schema: {
      operationId: 'listTenantCredentials',
      summary: "A tenant's credentials (hints only, never the secrets), revoked ones included",

      tags: ['credentials'],
      params: IdParams,
      response: { 200: Type.Object({ credentials: Type.Array(Credential) }) },
    },
    handler: (context) => async (request) => {
      await getTenant(context.db, request.params.id);
      const rows = await listCredentials(context.db, { tenantId: request.params.id });
      return { credentials: rows.filter((row) => row.kind !== 'backend_partner_key').map(credentialView) };
    },
  }),

  route({
    method: 'POST',
    url: '/tenants/:id/credentials',
    config: { resource: 'Tenant' },
    schema: {
      operationId: 'issueTenantCredential',
      tags: ['credentials'],
      summary: 'Issue another secret of a kind (rotation); earlier ones stay valid until revoked',
      params: IdParams,
      body: NewCredentialBody,
      response: { 201: Type.Object({ id: Uuid, kind: Type.String(), secret: Type.String() }) },
    },
    handler: (context) => async (request, reply) => {
      await getTenant(context.db, request.params.id);
      const { credential, secret } = await issueCredential(
        context.db,
        request.params.id,
        request.body.kind,
        sealWith(context),
      );
      return reply.code(201).send({ id: credential.id, kind: credential.kind, secret });
    },
  }),

  route({
    method: 'DELETE',
    url: '/credentials/:id',
    config: { resource: 'Credential' },
    schema: {
      operationId: 'revokeTenantCredential',
      tags: ['credentials'],
      summary: 'Revoke a tenant credential; it stops working on the next request',
      params: IdParams,
      response: { 200: Type.Object({ credential: Credential }) },
    },
    handler: (context) => async (request) => ({
      credential: credentialView(
        await revokeCredential(context.db, context.caches, request.params.id, TENANT_CREDENTIAL_KINDS),
      ),
    }),
  }),

  route({
    method: 'POST',
    url: '/partner-keys',
    config: { resource: 'Tenant' },
    schema: {
      operationId: 'createPartnerKey',
      tags: ['partner keys'],
      summary: 'Issue a backend partner key with scopes (shown once)',
      body: NewPartnerKeyBody,
      response: { 201: Type.Object({ id: Uuid, key: Type.String(), scopes: Type.Array(Type.String()) }) },
    },
    handler: (context) => async (request, reply) => {
      const tenantId = request.body.tenant_id ?? null;
      if (tenantId) await getTenant(context.db, tenantId);
      const { credential, secret } = await issuePartnerKey(context.db, { ...request.body, tenantId });
      return reply.code(201).send({ id: credential.id, key: secret, scopes: credential.scopes });
    },
  }),

  route({
    method: 'GET',
    url: '/partner-keys',
    config: { resource: 'Tenant' },
    schema: {
      operationId: 'listPartnerKeys',
      summary: 'List backend partner keys (hints only), revoked ones included',
      tags: ['partner keys'],
      response: { 200: Type.Object({ partner_keys: Type.Array(Credential) }) },
    },
    handler: (context) => async () => ({
      partner_keys: (await listCredentials(context.db, { kind: 'backend_partner_key' })).map(credentialView),
    }),
  }),

  route({
    method: 'DELETE',
    url: '/partner-keys/:id',
    config: { resource: 'Credential' },
    schema: {
      operationId: 'revokePartnerKey',
      tags: ['partner keys'],
      summary: 'Revoke a backend partner key; it stops working on the next request',
      params: IdParams,
      response: { 200: Type.Object({ partner_key: Credential }) },
    },
    handler: (context) => async (request) => ({
      partner_key: credentialView(
        await revokeCredential(context.db, context.caches, request.params.id, ['backend_partner_key']),
      ),
    }),
  }),

  route({
    method: 'POST',
    url: '/secrets/rekey',
    schema: {
      operationId: 'rekeySecrets',
      tags: ['credentials'],
      summary: 'Seal every payment endpoint signing secret again under SECRET_ENCRYPTION_KEY',
      description:
        'For a key rotation: every instance runs with the new SECRET_ENCRYPTION_KEY and the old one in ' +
        'SECRET_ENCRYPTION_KEY_PREVIOUS, then this re-seals what the old key sealed; the old key can then go. ' +
        'Secrets no configured key opens are listed and left as they are.',
      response: {
        200: Type.Object({
          secrets: Type.Integer({ description: 'Sealed secrets found, revoked ones included' }),
          resealed: Type.Integer({ description: 'Sealed again under the current key (the others already were)' }),
          unreadable: Type.Array(Uuid, { description: 'Credentials whose secret no configured key opens' }),
        }),
      },
    },
    handler: (context) => async () => resealSecrets(context.db, context.secretBox),
  }),
];
