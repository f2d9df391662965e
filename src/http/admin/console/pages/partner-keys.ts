// Backend partner keys: list with scopes and last use, create (shown once), revoke.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  BACKEND_SCOPES,
  getTenant,
  issuePartnerKey,
  listCredentials,
  listTenants,
  revokeCredential,
} from '../../../../tenants/index.js';
import { IdParams } from '../../../schemas.js';
import { NewPartnerKeyBody } from '../../tenants.js';
import { html, when } from '../html.js';
import { consoleUrl, may, page, postForm, secretBlock, secretWarning, table } from '../layout.js';
import { answer, type ConsoleDependencies, optionalText, sendPage, text, texts } from '../respond.js';

export const partnerKeyRoutes: FastifyPluginAsyncTypebox<ConsoleDependencies> = async (app, { context }) => {
  const { db, caches } = context;
  const hide = true;

  app.get('/partner-keys', { schema: { hide } }, async (request, reply) => {
    const view = request.consoleView;
    const [keys, tenants] = [await listCredentials(db, { kind: 'backend_partner_key' }), await listTenants(db)];
    const tenantNames = new Map(tenants.map((tenant) => [tenant.id, tenant.name]));
    const rows = keys.map(
      (key) =>
        html`<tr${key.revokedAt ? html` class="revoked"` : ''}><td>${key.name}</td><td class="mono">${key.hint}</td><td>${key.scopes.join(', ')}</td><td>${
          key.tenantId
            ? html`<a href="${consoleUrl(`/tenants/${key.tenantId}`)}">${tenantNames.get(key.tenantId)}</a>`
            : 'platform'
        }</td><td>${when(key.createdAt)}</td><td>${when(key.lastUsedAt)}</td><td>${
          key.revokedAt
            ? html`revoked ${when(key.revokedAt)}`
            : postForm(view, `/partner-keys/${key.id}/revoke`, html`<button class="danger small">Revoke</button>`, {
                confirm: `Revoke the key "${key.name ?? key.hint}"? Requests using it fail from now on.`,
                className: 'inline',
              })
        }</td></tr>`,
    );
    const content = html`${table(['Name', 'Key', 'Scopes', 'Tenant', 'Created', 'Last used', 'Revoked'], rows, 'No partner key yet.')}
${
  may(view) &&
  html`<section class="card"><h2>Create a partner key</h2>${postForm(
    view,
    '/partner-keys',
    html`<label>Name <input name="name" required maxlength="200"></label>
<fieldset><legend>Scopes</legend>${BACKEND_SCOPES.map(
      (scope) =>
        html`<label class="check"><input type="checkbox" name="scopes" value="${scope}" checked> ${scope}</label>`,
    )}</fieldset>
<label>Tenant <select name="tenant_id"><option value="">none: platform-wide</option>${tenants.map(
      (tenant) => html`<option value="${tenant.id}">${tenant.name}</option>`,
    )}</select></label>
<button>Create key</button>`,
    { className: 'stack' },
  )}</section>`
}`;
    return sendPage(reply, page(view, 'partner-keys', 'Partner keys', content));
  });

  app.post(
    '/partner-keys',
    {
      schema: { hide, body: NewPartnerKeyBody },
      config: {
        consoleForm: (fields) => ({
          name: text(fields, 'name'),
          scopes: texts(fields, 'scopes'),
          tenant_id: optionalText(fields, 'tenant_id') ?? null,
        }),
      },
    },
    async (request, reply) => {
      const tenantId = request.body.tenant_id ?? null;
      if (tenantId) await getTenant(db, tenantId);
      const { credential, secret } = await issuePartnerKey(db, { ...request.body, tenantId });
      request.auditTarget = credential.id;
      const content = html`${secretWarning}${secretBlock(`Backend partner key "${credential.name}" (${credential.scopes.join(', ')})`, secret, 'secret-0')}
<p><a class="button" href="${consoleUrl('/partner-keys')}">I have copied it: back to the keys</a></p>`;
      return answer(reply.code(201), page(request.consoleView, 'partner-keys', 'Partner key created', content));
    },
  );

  app.post('/partner-keys/:id/revoke', { schema: { hide, params: IdParams } }, async (request, reply) => {
    const revoked = await revokeCredential(db, caches, request.params.id, ['backend_partner_key']);
    return answer(reply, { redirect: '/partner-keys', notice: `Key "${revoked.name ?? revoked.hint}" revoked.` });
  });
};
