// The overview, where a link lands: the callbacks refused lately with their reasons, and the
// latest payment requests, each a click from the whole story.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { listNotificationLog, listPaymentRequests } from '../../../payments/index.js';
import { html } from '../../html.js';
import { sendPage } from '../../pages/protection.js';
import { page } from '../layout.js';
import { callbackTable } from './callbacks.js';
import { requestTable } from './requests.js';
import { type PortalDependencies, scopeOf } from './scope.js';

const SHOWN = 5;

export const overviewRoutes: FastifyPluginAsyncTypebox<PortalDependencies> = async (app, { context }) => {
  app.get('/', { schema: { hide: true } }, async (request, reply) => {
    const view = request.portalView;
    const { locale } = view;
    const t = locale.t;
    const scope = scopeOf(request);
    const [refused, requests] = await Promise.all([
      listNotificationLog(context.db, scope, { outcome: 'refused' }, { limit: SHOWN, offset: 0 }),
      listPaymentRequests(context.db, scope, {}, { limit: SHOWN, offset: 0 }),
    ]);
    const content = html`<p class="hint">${t('overview.lead', { tenant: view.session.tenantName })}</p>
<section class="card"><h2>${t('overview.refused')}</h2>${callbackTable(locale, refused.rows, t('overview.noRefused'))}
${refused.count > 0 && html`<p><a href="/callbacks?outcome=refused">${t('overview.allRefused')}</a></p>`}</section>
<section class="card"><h2>${t('overview.recent')}</h2>${requestTable(locale, requests.rows)}
<p><a href="/payment-requests">${t('overview.allRequests')}</a></p></section>`;
    return sendPage(reply, page(view, 'overview', t('overview.heading'), content));
  });
};
