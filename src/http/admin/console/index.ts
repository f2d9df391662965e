// The operators' console at /console/ on the admin listener: server-rendered pages (html.ts) with
// plain forms, enhanced by one small script; no build step, nothing fetched from elsewhere.
// Sign-in exchanges the admin token for a session cookie (sessions.ts); every state-changing
// request must carry the session's CSRF token and, when the browser sends one, our own Origin.

import { createHmac } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { AppError, ErrorCode } from '../../../errors.js';
import { renderScopeErrorsWith } from '../../errors.js';
import type { HostApp } from '../../host.js';
import { checkedForm, cookieOptions, serveAssets, servePages, signedCookie } from '../../pages/protection.js';
import type { RateLimitGuard } from '../../rate-limit.js';
import { recordFailedSignIn } from '../audit.js';
import { adminTokenDigest, operatorOfToken } from '../operators.js';
import { type Html, html } from './html.js';
import { CONSOLE_PREFIX, consoleUrl, ICON_LINK, page, signInPage, type View } from './layout.js';
import { auditRoutes } from './pages/audit.js';
import { callbackRoutes } from './pages/callbacks.js';
import { geoRoutes } from './pages/geo.js';
import { homeRoutes } from './pages/home.js';
import { invoiceRoutes } from './pages/invoices.js';
import { operatorRoutes } from './pages/operators.js';
import { partnerKeyRoutes } from './pages/partner-keys.js';
import { portalLinkRoutes } from './pages/portal-links.js';
import { promptRoutes } from './pages/prompts.js';
import { tenantRoutes } from './pages/tenants.js';
import {
  backTarget,
  CONSOLE_COOKIES,
  type ConsoleDependencies,
  type FormFields,
  SESSION_COOKIE,
  sendPage,
  setFlash,
  takeFlash,
} from './respond.js';
import { type ConsoleSession, ConsoleSessions, SESSION_HOURS } from './sessions.js';

declare module 'fastify' {
  interface FastifyRequest {
    consoleSession: ConsoleSession;
    consoleView: View;
    /** The form as submitted, before a route's `consoleForm` turned it into its JSON body. */
    consoleFields: FormFields;
  }
  interface FastifyContextConfig {
    /** Turns the submitted form into the body the route's schema validates (the admin API's own). */
    consoleForm?: (fields: FormFields) => unknown;
  }
}

const ASSETS = {
  'console.css': 'src/http/pages/assets/pages.css',
  'console.js': 'src/http/admin/console/assets/console.js',
  'favicon.svg': 'src/http/admin/console/assets/favicon.svg',
};
const PUBLIC_PATHS = new Set([
  consoleUrl('/sign-in'),
  ...Object.keys(ASSETS).map((name) => consoleUrl(`/assets/${name}`)),
]);

const pathOnly = (url: string) => url.split('?')[0].replace(/\/+$/, '') || '/';

const ERROR_TITLES: Record<number, string> = { 403: 'Not allowed', 404: 'Not found' };

/** An error as a page: with the console's navigation for a signed-in operator. */
function errorPage(error: AppError, view: View | undefined): Html {
  const title = ERROR_TITLES[error.statusCode] ?? 'Something went wrong';
  const message = html`<p class="flash error" role="alert">${error.message}</p>`;
  if (view) return page({ ...view, flash: null }, null, title, message);
  const body = html`<h1>${title}</h1>${message}
<p><a href="${consoleUrl('/')}">Back to the console</a></p>`;
  return html`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Error · Partner Integrations console</title>${ICON_LINK}<link rel="stylesheet" href="${consoleUrl('/assets/console.css')}"></head><body><main>${body}</main></body></html>`;
}

export async function consolePlugin(
  app: HostApp,
  { context, limits }: ConsoleDependencies & { limits: RateLimitGuard },
) {
  const key = createHmac('sha256', adminTokenDigest(context)).update('console cookie').digest();
  const operatorOf = operatorOfToken(context);
  const sessions = new ConsoleSessions(context.db, key);
  await servePages(app, { cookieSecret: key, frameAncestors: "'none'" });
  const sessionToken = (request: FastifyRequest) => signedCookie(request, SESSION_COOKIE);

  app.addHook('onRequest', async (request, reply) => {
    const url = pathOnly(request.url);
    if (PUBLIC_PATHS.has(url)) return;
    const found = await sessions.find(sessionToken(request));
    if (!found) {
      if (request.method === 'GET') return reply.redirect(consoleUrl('/sign-in'), 303);
      throw new AppError(ErrorCode.UNAUTHORIZED, 'Your session has ended: sign in again.');
    }
    request.consoleSession = found;
    request.adminActor = found.actor;
    request.adminOperator = found.operator;
    request.consoleView = {
      csrfToken: found.csrfToken,
      signedInAs: `${found.operator.name} (${found.operator.role})`,
      role: found.operator.role,
      flash: request.method === 'GET' ? takeFlash(request, reply) : null,
      path: request.url,
    };
  });

  // CSRF: after the body is parsed, before anything changes. The sign-in form has no session yet:
  // its defence is the Origin check and the SameSite cookie.
  app.addHook('preValidation', async (request) => {
    if (request.method === 'GET' || request.method === 'HEAD') return;
    const fields = checkedForm(request, request.consoleSession?.csrfToken ?? null);
    request.consoleFields = fields;
    const toBody = request.routeOptions.config.consoleForm;
    if (toBody) request.body = toBody(fields);
  });

  renderScopeErrorsWith(app, (appError, request, reply) => {
    const back = backTarget(request.consoleFields);
    if (request.method === 'POST' && back && appError.statusCode < 500 && appError.code !== ErrorCode.FORBIDDEN) {
      setFlash(request, reply, { level: 'error', text: appError.message });
      request.refusedChange = true;
      return reply.redirect(back, 303);
    }
    return sendPage(reply, errorPage(appError, request.consoleView), appError.statusCode);
  });
  app.setNotFoundHandler((request) => {
    throw new AppError(ErrorCode.NOT_FOUND, `No console page at ${pathOnly(request.url)}.`);
  });

  serveAssets(app, ASSETS);

  app.get('/sign-in', { schema: { hide: true } }, async (_request, reply) => sendPage(reply, signInPage(null)));
  // Open to anyone: whoever signs in gets their own role's session.
  app.post('/sign-in', { schema: { hide: true }, config: { operatorRole: 'read-only' } }, async (request, reply) => {
    const field = (request.body as FormFields | undefined)?.token;
    const token = typeof field === 'string' ? field : '';
    const operator = await operatorOf(token);
    if (!operator) {
      await limits.authenticationFailed(request, reply);
      // Within the failed-authentication budget only: past it the 429 above answers, unrecorded.
      await recordFailedSignIn(context, request, token);
      return sendPage(reply, signInPage('That is neither an operator token nor the admin token.'), 401);
    }
    const started = await sessions.start(operator);
    reply.setCookie(SESSION_COOKIE, started.token, cookieOptions(request, CONSOLE_COOKIES, SESSION_HOURS * 3600));
    // The audit trail names who signed in: the session just started.
    request.adminActor = started.actor;
    request.adminOperator = operator;
    return reply.redirect(consoleUrl('/'), 303);
  });
  app.post('/sign-out', { schema: { hide: true }, config: { operatorRole: 'read-only' } }, async (request, reply) => {
    const token = sessionToken(request);
    if (token) await sessions.end(token);
    reply.clearCookie(SESSION_COOKIE, { path: CONSOLE_PREFIX });
    return reply.redirect(consoleUrl('/sign-in'), 303);
  });

  const deps = { context };
  await app.register(homeRoutes, deps);
  await app.register(tenantRoutes, deps);
  await app.register(portalLinkRoutes, deps);
  await app.register(invoiceRoutes, deps);
  await app.register(callbackRoutes, deps);
  await app.register(partnerKeyRoutes, deps);
  await app.register(promptRoutes, deps);
  await app.register(geoRoutes, deps);
  await app.register(operatorRoutes, deps);
  await app.register(auditRoutes, deps);
}
