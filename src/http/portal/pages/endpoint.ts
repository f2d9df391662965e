// The partner's payment endpoint of the session's mode: its address, its circuit breaker (live
// endpoints have one), its last success, a ping (write access) and its last answer, the signing
// secrets' hints and how to verify a signature. Test mode adds the test invoice form.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { signingDependencies } from '../../../context.js';
import { AppError, ErrorCode } from '../../../errors.js';
import {
  createInvoice,
  endpointBreaker,
  lastDeliveredAt,
  lastPing,
  pingPaymentEndpoint,
} from '../../../payments/index.js';
import { getTenant, listCredentials, paymentEndpointIn } from '../../../tenants/index.js';
import { type Html, html } from '../../html.js';
import { badge } from '../../pages/blocks.js';
import { sendPage } from '../../pages/protection.js';
import { CurrencyCode, InvoiceAmount } from '../../shapes/payment-request.js';
import { page, postForm, type View } from '../layout.js';
import type { MessageKey } from '../messages/en.js';
import { requestPath } from './requests.js';
import { type PortalDependencies, scopeOf } from './scope.js';

const BREAKER_KIND: Record<string, string> = { closed: 'ok', open: 'bad', half_open: 'wait' };

const VERIFY_EXAMPLE = `import { Webhook } from 'standardwebhooks';

const webhook = new Webhook(process.env.PAYMENT_ENDPOINT_SECRET); // whsec_...
// Throws unless one signature matches and the timestamp is recent.
const paymentRequest = webhook.verify(rawBody, {
  'webhook-id': request.headers['webhook-id'],
  'webhook-timestamp': request.headers['webhook-timestamp'],
  'webhook-signature': request.headers['webhook-signature'],
});`;

export const endpointRoutes: FastifyPluginAsyncTypebox<PortalDependencies> = async (app, { context }) => {
  const { database, db, paymentQueue } = context;
  const hide = true;

  app.get('/endpoint', { schema: { hide } }, async (request, reply) => {
    const view = request.portalView;
    const { locale } = view;
    const t = locale.t;
    const scope = scopeOf(request);
    const tenant = await getTenant(db, scope.tenantId);
    const endpointUrl = paymentEndpointIn(tenant, scope.mode);
    const [lastSuccess, ping, secrets] = await Promise.all([
      lastDeliveredAt(db, scope),
      lastPing(db, scope.tenantId, scope.mode),
      listCredentials(db, { tenantId: scope.tenantId, kind: 'payment_endpoint_secret' }),
    ]);
    let breaker: Html;
    if (scope.mode === 'test') breaker = html`<dt>${t('endpoint.state')}</dt><dd>${t('endpoint.noBreaker')}</dd>`;
    else {
      const state = (await endpointBreaker(db, scope.tenantId)).breaker;
      const name = state?.state ?? 'closed';
      breaker = html`<dt>${t('endpoint.state')}</dt><dd>${badge(t(`breaker.${name}` as MessageKey), BREAKER_KIND[name] ?? 'off')}</dd>
<dt>${t('endpoint.failures')}</dt><dd>${locale.number(state?.consecutiveFailures ?? 0)}</dd>
${name !== 'closed' && html`<dt>${t('endpoint.nextProbe')}</dt><dd>${locale.time(state?.probeAt)}</dd>`}
${state?.lastError && html`<dt>${t('endpoint.lastError')}</dt><dd class="wrap"><bdi>${state.lastError}</bdi></dd>`}`;
    }
    // A ping of this mode's endpoint before its URL changed is not this endpoint's.
    const pinged = ping && ping.endpointUrl === endpointUrl ? ping : null;
    const pingResult = pinged
      ? html`${locale.time(pinged.pingedAt)}: ${
          pinged.error === null
            ? t('endpoint.pingOk', { status: pinged.httpStatus ?? 0, ms: locale.number(pinged.latencyMs ?? 0) })
            : t('endpoint.pingFailed', { error: pinged.error })
        }`
      : html`<span class="muted">${t('endpoint.neverPinged')}</span>`;
    const active = secrets.filter((secret) => secret.revokedAt === null);
    const content = html`<div class="columns">
<section class="card"><h2>${t('endpoint.status')}</h2><dl>
<dt>${t('endpoint.url')}</dt><dd class="mono wrap" dir="ltr">${endpointUrl ?? t('endpoint.none')}</dd>
${breaker}
<dt>${t('endpoint.lastSuccess')}</dt><dd>${locale.time(lastSuccess)}</dd>
</dl></section>
<section class="card"><h2>${t('endpoint.ping')}</h2><p class="hint">${t('endpoint.pingLead')}</p>
<dl><dt>${t('endpoint.lastPing')}</dt><dd>${pingResult}</dd></dl>
${view.session.access === 'write' && endpointUrl && postForm(view, '/endpoint/ping', html`<button>${t('endpoint.pingButton')}</button>`, 'inline')}
</section>
</div>
<section class="card"><h2>${t('endpoint.secret')}</h2><p>${t('endpoint.secretLead')}</p>
${
  active.length
    ? html`<ul>${active.map((secret) => html`<li><span class="mono" dir="ltr">${secret.hint}</span> <span class="muted">(${locale.time(secret.createdAt)})</span></li>`)}</ul>`
    : html`<p class="muted">${t('endpoint.noSecret')}</p>`
}
<h3>${t('endpoint.verify')}</h3><p>${t('endpoint.verifySteps')}</p><pre class="payload" dir="ltr">${VERIFY_EXAMPLE}</pre></section>`;
    return sendPage(reply, page(view, 'endpoint', t('endpoint.heading'), content));
  });

  app.post('/endpoint/ping', { schema: { hide }, config: { portalWrite: true } }, async (request, reply) => {
    const { tenantId, mode } = scopeOf(request);
    await pingPaymentEndpoint(signingDependencies(context), tenantId, mode);
    return reply.redirect('/endpoint?notice=endpoint.pinged', 303);
  });

  const testOnly = (view: View) => {
    if (view.session.mode !== 'test') throw new AppError(ErrorCode.NOT_FOUND, view.locale.t('test.liveOnly'));
  };

  app.get('/test-invoice', { schema: { hide } }, async (request, reply) => {
    const view = request.portalView;
    testOnly(view);
    const t = view.locale.t;
    const tenant = await getTenant(db, view.session.tenantId);
    const form =
      view.session.access !== 'write'
        ? html`<p class="flash warning">${t('error.readOnly')}</p>`
        : !tenant.testPaymentEndpointUrl
          ? html`<p class="flash warning">${t('test.noEndpoint')}</p>`
          : postForm(
              view,
              '/test-invoice',
              html`<label>${t('test.amount')} <input name="amount" required inputmode="decimal" pattern="[0-9]+(\\.[0-9]+)?" value="100.00" dir="ltr"></label>
<label>${t('test.currency')} <input name="currency" required pattern="[A-Z]{3}" maxlength="3" value="SAR" dir="ltr"></label>
<button>${t('test.create')}</button>`,
            );
    return sendPage(
      reply,
      page(
        view,
        'test',
        t('test.heading'),
        html`<p class="hint">${t('test.lead')}</p><section class="card">${form}</section>`,
      ),
    );
  });

  app.post(
    '/test-invoice',
    {
      schema: {
        hide,
        body: Type.Object({ _csrf: Type.String(), amount: InvoiceAmount, currency: CurrencyCode }),
      },
      config: { portalWrite: true },
    },
    async (request, reply) => {
      testOnly(request.portalView);
      const { amount, currency } = request.body;
      const { invoice } = await createInvoice(database, paymentQueue, {
        amount,
        currency,
        tenant_id: request.portalSession.tenantId,
        mode: 'test',
      });
      return reply.redirect(`${requestPath(invoice.id)}?notice=test.created`, 303);
    },
  );
};
