// The partner portal (DECISIONS §11): a listener of its own where a partner's support staff see
// their side of the payment conversation in a browser, in Arabic or English. Server-rendered pages
// with the console's protections (src/http/pages/): no inline script, plain forms with a CSRF
// token, a signed HttpOnly SameSite session cookie, sessions kept as digests and ended on the
// server. A session is opened only by a one-time link (src/tenants/portal.ts) and sees one tenant
// in one mode; every read goes through the domain functions the self-serve API uses.
import { createHash, createHmac } from 'node:crypto';
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { recordAuditEvent } from '../../audit/index.js';
import type { AppContext } from '../../context.js';
import { AppError, ErrorCode } from '../../errors.js';
import {
  endPortalSession,
  findPortalSession,
  openPortalSession,
  PORTAL_LINK_MINUTES,
  PORTAL_SESSION_HOURS,
  type PortalSession,
} from '../../tenants/index.js';
import { renderScopeErrorsWith } from '../errors.js';
import { createHostApp, type HostApp } from '../host.js';
import { type Html, html } from '../html.js';
import {
  type CookieScope,
  checkedForm,
  cookieOptions,
  csrfTokenOf,
  type FormFields,
  sendPage,
  serveAssets,
  servePages,
  signedCookie,
} from '../pages/protection.js';
import { PORTAL_SIGN_IN_PATH } from '../portal-links.js';
import { rateLimitGuard } from '../rate-limit.js';
import { ASSET_PATHS, page, shell, type View } from './layout.js';
import { chooseLanguage, type Locale, localeOf } from './locale.js';
import type { MessageKey } from './messages/en.js';
import { portalPages } from './pages/index.js';

declare module 'fastify' {
  interface FastifyRequest {
    portalSession: PortalSession;
    portalView: View;
    /** The submitted form of a POST. */
    portalFields: FormFields;
  }
  interface FastifyContextConfig {
    /** The route changes something: a read-only session is refused. */
    portalWrite?: boolean;
  }
}

export const PORTAL_SESSION_COOKIE = 'pi_portal_session';
const PUBLIC_PATHS = new Set([PORTAL_SIGN_IN_PATH, '/healthz', '/readyz', ASSET_PATHS.css, ASSET_PATHS.js]);

const pathOnly = (url: string) => url.split('?')[0].replace(/\/+$/, '') || '/';

/** A page with only a message (an error, a refused link, signed out), in the browser's language. */
function messagePage(locale: Locale, title: string, message: string, alert: boolean): Html {
  return shell(
    locale,
    title,
    null,
    html`<h1>${title}</h1><p class="flash ${alert ? 'error' : 'ok'}"${alert ? html` role="alert"` : ''}>${message}</p>`,
  );
}

/** An error's page: within a session, with its sections and a way back; else the message alone. */
function errorPage(request: FastifyRequest, locale: Locale, error: AppError): Html {
  const t = locale.t;
  const title = t(error.statusCode === 404 ? 'error.notFound' : 'error.other');
  // The catalogue's words where it has them; a domain's refusal (a conflict) as it was answered.
  const message =
    error.code === ErrorCode.UNAUTHORIZED
      ? t('session.ended')
      : error.code === ErrorCode.NOT_FOUND
        ? t('error.noPage')
        : error.message;
  const view = request.portalView;
  if (!view) return messagePage(locale, title, message, true);
  return page(
    view,
    null,
    title,
    html`<p class="flash error" role="alert">${message}</p><p class="mono wrap" dir="ltr">${pathOnly(request.url)}</p><p><a href="/">${t('error.back')}</a></p>`,
  );
}

export interface PortalOptions {
  /** Where partners send payment callbacks: shown in the payment request body as we send it. */
  notifyUrl: string;
}

export async function buildPortalApp(
  context: AppContext,
  logger: FastifyBaseLogger,
  { notifyUrl }: PortalOptions,
): Promise<HostApp> {
  const { db, config } = context;
  const app = createHostApp(context, {
    listener: 'portal',
    logger,
    // Refusals before routing (a malformed request line) in JSON; every other error is a page.
    errors: { body: (error) => ({ error: { code: error.code, message: error.message } }) },
  });
  const limits = rateLimitGuard(context, 'portal');
  // Derived from the admin token, which every instance shares: any of them reads another's cookies.
  const key = createHmac('sha256', createHash('sha256').update(config.adminToken).digest())
    .update('portal cookie')
    .digest();
  const csrfKey = createHmac('sha256', key).update('portal csrf').digest();
  const frameAncestors = config.portalFrameAncestors.length ? config.portalFrameAncestors.join(' ') : "'none'";
  // Embedded by another site, the frame sends only a SameSite=None cookie; on its own, Lax lets the
  // link (a navigation from the partner's site) open the session it sets.
  const cookies: CookieScope = { path: '/', sameSite: config.portalFrameAncestors.length ? 'none' : 'lax' };
  await servePages(app, { cookieSecret: key, frameAncestors });
  serveAssets(app, {
    'pages.css': 'src/http/pages/assets/pages.css',
    'portal.js': 'src/http/portal/assets/portal.js',
  });
  const browserLocale = (request: FastifyRequest) => localeOf(chooseLanguage(null, request.headers['accept-language']));

  app.decorateRequest('portalSession', null as never);
  app.addHook('onRequest', async (request) => {
    if (PUBLIC_PATHS.has(pathOnly(request.url))) return;
    const token = signedCookie(request, PORTAL_SESSION_COOKIE);
    const session = await findPortalSession(db, token);
    if (!session || !token) throw new AppError(ErrorCode.UNAUTHORIZED);
    request.portalSession = session;
    const notice = (request.query as { notice?: unknown }).notice;
    const locale = localeOf(chooseLanguage(session.language, request.headers['accept-language']));
    request.portalView = {
      locale,
      session,
      csrfToken: csrfTokenOf(csrfKey, token),
      notice: typeof notice === 'string' && Object.hasOwn(NOTICES, notice) ? locale.t(NOTICES[notice]) : null,
    };
  });
  app.addHook('preValidation', async (request) => {
    if (request.method === 'GET' || request.method === 'HEAD') return;
    request.portalFields = checkedForm(request, request.portalView?.csrfToken ?? null);
    if (request.routeOptions.config.portalWrite && request.portalSession?.access !== 'write') {
      throw new AppError(ErrorCode.FORBIDDEN, request.portalView.locale.t('error.readOnly'));
    }
  });

  renderScopeErrorsWith(app, (error, request, reply) =>
    sendPage(reply, errorPage(request, request.portalView?.locale ?? browserLocale(request), error), error.statusCode),
  );
  app.setNotFoundHandler(() => {
    throw new AppError(ErrorCode.NOT_FOUND);
  });

  // The link: spent at once, its session's token in the cookie, then the overview (a redirect
  // takes the link out of the address bar and of any Referer).
  app.get(PORTAL_SIGN_IN_PATH, { schema: { hide: true } }, async (request, reply) => {
    const { token } = request.query as { token?: unknown };
    const opened = typeof token === 'string' ? await openPortalSession(db, token) : null;
    if (!opened) {
      await limits.authenticationFailed(request, reply);
      const locale = browserLocale(request);
      const message = locale.t('session.linkRefused', { minutes: locale.number(PORTAL_LINK_MINUTES) });
      return sendPage(reply, messagePage(locale, locale.t('portal.title'), message, true), 401);
    }
    await recordAuditEvent(db, {
      actor: `portal session ${opened.session.id.slice(0, 8)}`,
      action: 'portal sign-in',
      targetId: opened.session.tenantId,
      fields: [opened.session.mode, opened.session.access],
      status: 303,
      address: request.ip,
      requestId: request.id,
    });
    reply.setCookie(PORTAL_SESSION_COOKIE, opened.token, cookieOptions(request, cookies, PORTAL_SESSION_HOURS * 3600));
    return reply.redirect('/', 303);
  });
  app.post('/sign-out', { schema: { hide: true } }, async (request, reply) => {
    const token = signedCookie(request, PORTAL_SESSION_COOKIE);
    if (token) await endPortalSession(db, token);
    reply.clearCookie(PORTAL_SESSION_COOKIE, { path: cookies.path });
    const { locale } = request.portalView;
    return sendPage(reply, messagePage(locale, locale.t('session.signOut'), locale.t('session.signedOut'), false));
  });

  await app.register(portalPages, { context, notifyUrl });
  return app;
}

/** The notices an action may leave for the page it leads to (`?notice=`): catalogue keys only. */
const NOTICES: Record<string, MessageKey> = {
  'request.resent': 'request.resent',
  'endpoint.pinged': 'endpoint.pinged',
  'test.created': 'test.created',
};
