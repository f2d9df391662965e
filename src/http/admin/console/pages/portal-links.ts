// A tenant's partner portal link, from the console: the same one-time link the tenant's backend
// gets from `POST /api/v1/portal-sessions/`, for a mode and an access, shown once (the admin host
// audits the request, by the operator who asked).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { getTenant, MODES, PORTAL_ACCESS, PORTAL_LINK_MINUTES } from '../../../../tenants/index.js';
import { newPortalLink } from '../../../portal-links.js';
import { IdParams } from '../../../schemas.js';
import { type Html, html, when } from '../html.js';
import { consoleUrl, page, postForm, secretBlock, type View } from '../layout.js';
import { answer, type ConsoleDependencies, text } from '../respond.js';

/** The tenant page's card: a link button per mode, each with its access. */
export function portalLinkCard(view: View, tenantId: string): Html {
  const forms = MODES.map((mode) =>
    postForm(
      view,
      `/tenants/${tenantId}/portal-link`,
      html`<input type="hidden" name="mode" value="${mode}"><label>Access <select name="access">${PORTAL_ACCESS.map(
        (access) => html`<option value="${access}">${access}</option>`,
      )}</select></label><button>${mode === 'live' ? 'Live portal link' : 'Test portal link'}</button>`,
      { className: 'inline' },
    ),
  );
  return html`<section class="card"><h2>Partner portal</h2><p class="hint">A one-time link to the tenant's portal, valid ${PORTAL_LINK_MINUTES} minutes: give it to the partner's support staff, or open it to see what they see.</p><div class="toolbar">${forms}</div></section>`;
}

export const portalLinkRoutes: FastifyPluginAsyncTypebox<ConsoleDependencies> = async (app, { context }) => {
  app.post(
    '/tenants/:id/portal-link',
    {
      schema: {
        hide: true,
        params: IdParams,
        body: Type.Object({
          mode: Type.Union(MODES.map((mode) => Type.Literal(mode))),
          access: Type.Union(PORTAL_ACCESS.map((access) => Type.Literal(access))),
        }),
      },
      config: { consoleForm: (fields) => ({ mode: text(fields, 'mode'), access: text(fields, 'access') }) },
    },
    async (request, reply) => {
      const tenant = await getTenant(context.db, request.params.id);
      const { mode, access } = request.body;
      const link = await newPortalLink(context, {
        tenantId: tenant.id,
        mode,
        access,
        language: null,
        issuedBy: request.adminActor ?? 'console',
        credentialId: null,
        operatorId: request.adminOperator?.id ?? null,
      });
      return answer(
        reply,
        page(
          request.consoleView,
          'tenants',
          `${mode === 'live' ? 'Live' : 'Test'} portal link for ${tenant.name}`,
          html`<p class="flash warning" role="alert"><strong>A secret until used.</strong> It opens a ${access} session of ${tenant.name} once, until ${when(link.expiresAt)}.</p>
${secretBlock('Portal link', link.url, 'portal-link')}
<p><a class="button" href="${link.url}" target="_blank" rel="noopener">Open the portal</a> <a href="${consoleUrl(`/tenants/${tenant.id}`)}">Back to ${tenant.name}</a></p>`,
        ),
      );
    },
  );
};
