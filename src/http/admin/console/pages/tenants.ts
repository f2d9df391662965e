// Tenants: find them, create one (its three secrets shown once), see and edit one, its credentials
// by kind with their last use, issue another secret, revoke one, deactivate or activate.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { signingDependencies } from '../../../../context.js';
import {
  type BreakerEventRow,
  type BreakerRow,
  type EndpointPingRow,
  endpointBreaker,
  isSuccessStatus,
  lastPing,
  lastSignedAt,
  pingPaymentEndpoint,
} from '../../../../payments/index.js';
import {
  type CredentialWithUse,
  createTenant,
  getTenant,
  issueCredential,
  listCredentials,
  listTenants,
  revokeCredential,
  TENANT_CREDENTIAL_KINDS,
  type TenantCredentialKind,
  type TenantRow,
  updateTenant,
} from '../../../../tenants/index.js';
import { IdParams } from '../../../schemas.js';
import { NewCredentialBody, NewTenantBody, TenantChangesBody } from '../../tenants.js';
import { type Html, html, when } from '../html.js';
import { badge, consoleUrl, may, page, postForm, secretBlock, secretWarning, table, type View } from '../layout.js';
import { answer, type ConsoleDependencies, optionalText, sendPage, setFlash, text } from '../respond.js';
import { breakerCard } from './breakers.js';
import { portalLinkCard } from './portal-links.js';

export const KIND_LABELS: Record<TenantCredentialKind, string> = {
  sso_hmac_secret: 'SSO HMAC secret (Authorization: Api-Key on /api/v1/)',
  partner_api_key: 'Partner API key (X-API-KEY on the payment callback)',
  payment_endpoint_secret: 'Payment endpoint signing secret (whsec_, verifies our payment requests)',
  // Neither contains a live kind's label: they are told apart by it.
  test_sso_hmac_secret: 'Test SSO secret (pis_test_sso_: Authorization: Api-Key in test mode)',
  test_partner_api_key: 'Test partner key (pis_test_pay_: X-API-KEY in test mode, test invoices only)',
};

const activeBadge = (tenant: TenantRow) => (tenant.isActive ? badge('active', 'ok') : badge('inactive', 'off'));

/**
 * The supported gateways; a tenant's gateway no longer supported (SUPPORTED_GATEWAYS changed) is
 * offered too, as "keep it" (an empty value: no change), so that saving another field keeps it.
 */
function gatewaySelect(gateways: string[], selected: string | null): Html {
  const kept =
    selected !== null && !gateways.includes(selected)
      ? html`<option value="" selected>${selected} (no longer supported: kept)</option>`
      : '';
  // Not `required` then: a browser takes an empty first option for no choice.
  return html`<select name="gateway"${kept ? '' : html` required`}>${kept}${gateways.map(
    (gateway) => html`<option${gateway === selected ? html` selected` : ''}>${gateway}</option>`,
  )}</select>`;
}

function tenantList(view: View, tenants: TenantRow[], query: { q?: string; active?: string }, gateways: string[]) {
  const rows = tenants.map(
    (tenant) =>
      html`<tr><td><a href="${consoleUrl(`/tenants/${tenant.id}`)}">${tenant.name}</a></td><td class="mono">${tenant.slug}</td><td>${tenant.gateway}</td><td>${activeBadge(tenant)}</td><td class="wrap">${tenant.paymentEndpointUrl ?? html`<span class="muted">none</span>`}</td></tr>`,
  );
  const option = (value: string, label: string) =>
    html`<option value="${value}"${(query.active ?? '') === value ? html` selected` : ''}>${label}</option>`;
  return html`<form method="get" class="filters" role="search">
<label>Search <input type="search" name="q" value="${query.q ?? ''}" placeholder="name or slug"></label>
<label>Status <select name="active" data-autosubmit>${option('', 'all')}${option('active', 'active')}${option('inactive', 'inactive')}</select></label>
<button>Filter</button></form>
${table(['Name', 'Slug', 'Gateway', 'Status', 'Payment endpoint'], rows, 'No tenant matches.')}
${
  may(view) &&
  html`<details class="card"${tenants.length === 0 && !query.q ? html` open` : ''}><summary>Create a tenant</summary>
${postForm(
  view,
  '/tenants',
  html`<label>Name <input name="name" required maxlength="200"></label>
<label>Slug <input name="slug" required pattern="[a-z0-9](?:[a-z0-9\\-]{0,61}[a-z0-9])?" title="lower-case letters, digits and hyphens"></label>
<label>Gateway ${gatewaySelect(gateways, null)}</label>
<label>Payment endpoint URL <input name="payment_endpoint_url" type="url" placeholder="https://pay.partner.example/requests"></label>
<label>Test payment endpoint URL <input name="test_payment_endpoint_url" type="url" placeholder="https://sandbox.partner.example/requests"></label>
<button>Create tenant</button>`,
  { className: 'stack' },
)}</details>`
}`;
}

function credentialRows(view: View, credentials: CredentialWithUse[]): Html[] {
  return credentials.map(
    (credential) =>
      html`<tr${credential.revokedAt ? html` class="revoked"` : ''}><td class="mono">${credential.hint}</td><td>${when(credential.createdAt)}</td><td>${when(credential.lastUsedAt)}</td><td>${
        credential.revokedAt
          ? html`revoked ${when(credential.revokedAt)}`
          : postForm(view, `/credentials/${credential.id}/revoke`, html`<button class="danger small">Revoke</button>`, {
              confirm: `Revoke ${credential.hint}? Requests using it fail from now on.`,
              className: 'inline',
            })
      }</td></tr>`,
  );
}

/** How a ping went, in a few words. */
function pingOutcome(ping: EndpointPingRow): string {
  const status = ping.httpStatus === null ? 'no answer' : `HTTP ${ping.httpStatus}`;
  const latency = ping.latencyMs === null ? '' : ` in ${ping.latencyMs} ms`;
  return `${status}${latency}${ping.error ? `: ${ping.error}` : ''}`;
}

/** The latest ping and a button to send one now (for those who may). */
function pingLine(view: View, tenant: TenantRow, ping: EndpointPingRow | null): Html {
  const last = ping
    ? html`${isSuccessStatus(ping.httpStatus) ? badge('answered', 'ok') : badge('failed', 'bad')} ${pingOutcome(ping)}, ${when(ping.pingedAt)}`
    : html`<span class="muted">never pinged</span>`;
  return html`<dt>Last ping</dt><dd>${last} ${
    tenant.paymentEndpointUrl &&
    postForm(view, `/tenants/${tenant.id}/payment-endpoint/ping`, html`<button class="small">Ping now</button>`, {
      className: 'inline',
    })
  }</dd>`;
}

function tenantPage(
  view: View,
  tenant: TenantRow,
  credentials: CredentialWithUse[],
  gateways: string[],
  breaker: { breaker: BreakerRow | null; history: BreakerEventRow[] },
  ping: EndpointPingRow | null,
): Html {
  const kinds = TENANT_CREDENTIAL_KINDS.map(
    (kind) => html`<section class="card"><h3>${KIND_LABELS[kind]}</h3>
${table(
  ['Secret', 'Created', 'Last used', 'Revoked'],
  credentialRows(
    view,
    credentials.filter((credential) => credential.kind === kind),
  ),
  'None.',
)}
${postForm(view, `/tenants/${tenant.id}/credentials`, html`<input type="hidden" name="kind" value="${kind}"><button>Issue another</button>`, { className: 'inline' })}
</section>`,
  );
  const toggle = tenant.isActive
    ? postForm(
        view,
        `/tenants/${tenant.id}/activation`,
        html`<input type="hidden" name="is_active" value="false"><button class="danger">Deactivate</button>`,
        {
          confirm: `Deactivate ${tenant.name}? All its credentials stop working at once.`,
          className: 'inline',
        },
      )
    : postForm(
        view,
        `/tenants/${tenant.id}/activation`,
        html`<input type="hidden" name="is_active" value="true"><button>Activate</button>`,
        {
          className: 'inline',
        },
      );
  return html`<div class="toolbar">${activeBadge(tenant)} <span class="mono">${tenant.slug}</span> <a href="${consoleUrl(`/invoices?tenant=${tenant.id}`)}">Invoices</a> <a href="${consoleUrl(`/tenants/${tenant.id}/callbacks`)}">Callbacks</a> ${toggle}</div>
<div class="columns">
<section class="card"><h2>Details</h2><dl>
<dt>Id</dt><dd class="mono">${tenant.id}</dd>
<dt>Gateway</dt><dd>${tenant.gateway}</dd>
<dt>Payment endpoint</dt><dd class="wrap">${tenant.paymentEndpointUrl ?? html`<span class="muted">none</span>`}</dd>
<dt>Test payment endpoint</dt><dd class="wrap">${tenant.testPaymentEndpointUrl ?? html`<span class="muted">none</span>`}</dd>
${pingLine(view, tenant, ping)}
<dt>Created</dt><dd>${when(tenant.createdAt)}</dd><dt>Updated</dt><dd>${when(tenant.updatedAt)}</dd></dl></section>
${
  may(view) &&
  html`<section class="card"><h2>Edit</h2>${postForm(
    view,
    `/tenants/${tenant.id}`,
    html`<label>Name <input name="name" required maxlength="200" value="${tenant.name}"></label>
<label>Gateway ${gatewaySelect(gateways, tenant.gateway)}</label>
<label>Payment endpoint URL <input name="payment_endpoint_url" type="url" value="${tenant.paymentEndpointUrl ?? ''}"></label>
<label>Test payment endpoint URL <input name="test_payment_endpoint_url" type="url" value="${tenant.testPaymentEndpointUrl ?? ''}"></label>
<button>Save</button>`,
    { className: 'stack' },
  )}</section>`
}
</div>
${breakerCard(breaker.breaker, breaker.history)}
${portalLinkCard(view, tenant.id)}
<h2>Credentials</h2>
${kinds}`;
}

function secretsPage(view: View, title: string, tenant: TenantRow, secrets: [string, string][]): Html {
  return page(
    view,
    'tenants',
    title,
    html`${secretWarning}${secrets.map(([label, secret], i) => secretBlock(label, secret, `secret-${i}`))}
<p><a class="button" href="${consoleUrl(`/tenants/${tenant.id}`)}">I have copied them: go to ${tenant.name}</a></p>`,
  );
}

export const tenantRoutes: FastifyPluginAsyncTypebox<ConsoleDependencies> = async (app, { context }) => {
  const { db, caches, config, secretBox } = context;
  const rules = { supportedGateways: config.supportedGateways };
  const seal = (secret: string) => secretBox.seal(secret);
  const hide = true;

  app.get(
    '/tenants',
    {
      schema: {
        hide,
        querystring: Type.Object({
          q: Type.Optional(Type.String({ maxLength: 200 })),
          active: Type.Optional(Type.Union([Type.Literal(''), Type.Literal('active'), Type.Literal('inactive')])),
        }),
      },
    },
    async (request, reply) => {
      const { q, active } = request.query;
      const tenants = await listTenants(db, {
        search: q?.trim() || undefined,
        active: active ? active === 'active' : undefined,
      });
      const view = request.consoleView;
      return sendPage(
        reply,
        page(view, 'tenants', 'Tenants', tenantList(view, tenants, request.query, config.supportedGateways)),
      );
    },
  );

  app.post(
    '/tenants',
    {
      schema: { hide, body: NewTenantBody },
      config: {
        consoleForm: (fields) => ({
          name: text(fields, 'name'),
          slug: text(fields, 'slug'),
          gateway: text(fields, 'gateway'),
          payment_endpoint_url: optionalText(fields, 'payment_endpoint_url') ?? null,
          test_payment_endpoint_url: optionalText(fields, 'test_payment_endpoint_url') ?? null,
        }),
      },
    },
    async (request, reply) => {
      const { tenant, secrets } = await createTenant(db, request.body, rules, seal);
      request.auditTarget = tenant.id;
      const shown = (Object.entries(secrets) as [keyof typeof secrets, string][]).map(
        ([kind, secret]): [string, string] => [KIND_LABELS[kind], secret],
      );
      return answer(reply.code(201), secretsPage(request.consoleView, `Tenant ${tenant.name} created`, tenant, shown));
    },
  );

  app.get('/tenants/:id', { schema: { hide, params: IdParams } }, async (request, reply) => {
    const tenant = await getTenant(db, request.params.id);
    const credentials = await listCredentials(db, { tenantId: tenant.id });
    // A signing secret signs every message sent while it is not revoked: its use is the last one sent.
    const lastSigned = await lastSignedAt(db, tenant.id);
    const tenantCredentials = credentials
      .filter((credential) => credential.kind !== 'backend_partner_key')
      .map((credential) =>
        credential.kind === 'payment_endpoint_secret' &&
        credential.revokedAt === null &&
        lastSigned !== null &&
        lastSigned >= credential.createdAt
          ? { ...credential, lastUsedAt: lastSigned }
          : credential,
      );
    const view = request.consoleView;
    return sendPage(
      reply,
      page(
        view,
        'tenants',
        tenant.name,
        tenantPage(
          view,
          tenant,
          tenantCredentials,
          config.supportedGateways,
          await endpointBreaker(db, tenant.id),
          await lastPing(db, tenant.id),
        ),
      ),
    );
  });

  app.post(
    '/tenants/:id',
    {
      schema: { hide, params: IdParams, body: TenantChangesBody },
      config: {
        consoleForm: (fields) => ({
          name: text(fields, 'name'),
          gateway: optionalText(fields, 'gateway'),
          payment_endpoint_url: optionalText(fields, 'payment_endpoint_url') ?? null,
          test_payment_endpoint_url: optionalText(fields, 'test_payment_endpoint_url') ?? null,
        }),
      },
    },
    async (request, reply) => {
      const tenant = await updateTenant(db, caches, request.params.id, request.body, rules);
      return answer(reply, { redirect: `/tenants/${tenant.id}`, notice: `${tenant.name} saved.` });
    },
  );

  app.post('/tenants/:id/payment-endpoint/ping', { schema: { hide, params: IdParams } }, async (request, reply) => {
    const ping = await pingPaymentEndpoint(signingDependencies(context), request.params.id);
    if (isSuccessStatus(ping.httpStatus)) {
      return answer(reply, {
        redirect: `/tenants/${request.params.id}`,
        notice: `Ping answered: ${pingOutcome(ping)}.`,
      });
    }
    setFlash(request, reply, { level: 'error', text: `Ping not accepted: ${pingOutcome(ping)}.` });
    return reply.redirect(consoleUrl(`/tenants/${request.params.id}`), 303);
  });

  app.post(
    '/tenants/:id/activation',
    {
      schema: { hide, params: IdParams, body: TenantChangesBody },
      config: { consoleForm: (fields) => ({ is_active: text(fields, 'is_active') === 'true' }) },
    },
    async (request, reply) => {
      const tenant = await updateTenant(db, caches, request.params.id, request.body, rules);
      const notice = tenant.isActive
        ? `${tenant.name} activated.`
        : `${tenant.name} deactivated: its credentials no longer work.`;
      return answer(reply, { redirect: `/tenants/${tenant.id}`, notice });
    },
  );

  app.post(
    '/tenants/:id/credentials',
    {
      schema: { hide, params: IdParams, body: NewCredentialBody },
      config: { consoleForm: (fields) => ({ kind: text(fields, 'kind') }) },
    },
    async (request, reply) => {
      const tenant = await getTenant(db, request.params.id);
      const { secret } = await issueCredential(db, tenant.id, request.body.kind, seal);
      const title = `New ${request.body.kind.replaceAll('_', ' ')} for ${tenant.name}`;
      return answer(
        reply.code(201),
        secretsPage(request.consoleView, title, tenant, [[KIND_LABELS[request.body.kind], secret]]),
      );
    },
  );

  app.post('/credentials/:id/revoke', { schema: { hide, params: IdParams } }, async (request, reply) => {
    const revoked = await revokeCredential(db, caches, request.params.id, TENANT_CREDENTIAL_KINDS);
    return answer(reply, { redirect: `/tenants/${revoked.tenantId}`, notice: `${revoked.hint} revoked.` });
  });
};
