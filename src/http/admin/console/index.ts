// The operators' console at /console/ on the admin listener: server-rendered pages (html.ts) with
// plain forms, enhanced by one small script; no build step, nothing fetched from elsewhere.
// Sign-in exchanges the admin token for a session cookie (sessions.ts); every state-changing
// request must carry the session's CSRF token and, when the browser sends one, our own Origin.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import cookie from '@fastify/cookie';
import type { FastifyRequest } from 'fastify';
import { AppError, ErrorCode } from '../../../errors.js';
import { BOOTSTRAP_ADMIN, resolveOperatorToken } from '../../../operators/index.js';
import { projectRoot } from '../../../paths.js';
import { unacceptableString } from '../../../text.js';
import { toAppError } from '../../errors.js';
import type { HostApp } from '../../host.js';
import type { RateLimitGuard } from '../../rate-limit.js';
import { recordFailedSignIn } from '../audit.js';
import { type Html, html } from './html.js';
import { CONSOLE_PREFIX, consoleUrl, ICON_LINK, page, signInPage, type View } from './layout.js';
import { auditRoutes } from './pages/audit.js';
import { callbackRoutes } from './pages/callbacks.js';
import { geoRoutes } from './pages/geo.js';
import { homeRoutes } from './pages/home.js';
import { invoiceRoutes } from './pages/invoices.js';
import { operatorRoutes } from './pages/operators.js';
import { partnerKeyRoutes } from './pages/partner-keys.js';
import { promptRoutes } from './pages/prompts.js';
import { tenantRoutes } from './pages/tenants.js';
import {
  backTarget,
  type ConsoleDependencies,
  cookieOptions,
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

const FORM_MEDIA_TYPE = /^application\/x-www-form-urlencoded\s*(;|$)/i;
const ASSET_TYPES: Record<string, string> = {
  'console.css': 'text/css',
  'console.js': 'text/javascript',
  'favicon.svg': 'image/svg+xml',
};
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');
const PUBLIC_PATHS = new Set([
  consoleUrl('/sign-in'),
  ...Object.keys(ASSET_TYPES).map((name) => consoleUrl(`/assets/${name}`)),
]);

const assets = new Map(
  Object.keys(ASSET_TYPES).map((name) => [
    name,
    readFileSync(path.join(projectRoot, 'src/http/admin/console/assets', name), 'utf8'),
  ]),
);

function parseForm(_request: FastifyRequest, body: string, done: (error: Error | null, body?: unknown) => void) {
  const fields: FormFields = {};
  for (const [name, value] of new URLSearchParams(body)) {
    const present = fields[name];
    fields[name] = present === undefined ? value : [present, value].flat();
  }
  const problem = unacceptableString(fields, 'body');
  done(problem ? new AppError(ErrorCode.VALIDATION_ERROR, `${problem.field}: ${problem.message}`) : null, fields);
}

/** A request from another site: its Origin (or Sec-Fetch-Site) says so. */
function crossSite(request: FastifyRequest): boolean {
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== `${request.protocol}://${request.host}`) return true;
  return request.headers['sec-fetch-site'] === 'cross-site';
}

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
  { context, tokenDigest, limits }: ConsoleDependencies & { tokenDigest: Buffer; limits: RateLimitGuard },
) {
  const key = createHmac('sha256', tokenDigest).update('console cookie').digest();
  const sessions = new ConsoleSessions(context.db, key);
  await app.register(cookie, { secret: key });
  app.addContentTypeParser(FORM_MEDIA_TYPE, { parseAs: 'string' }, parseForm);

  const sessionToken = (request: FastifyRequest) => {
    const raw = request.cookies[SESSION_COOKIE];
    const unsigned = raw ? request.unsignCookie(raw) : null;
    return unsigned?.valid ? (unsigned.value ?? undefined) : undefined;
  };
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
    // Not helmet's no-referrer: under it browsers send `Origin: null` with forms, which the
    // Origin check must refuse. Nothing leaves for other sites either way.
    reply.header('referrer-policy', 'same-origin');
    if (String(reply.getHeader('content-type') ?? '').startsWith('text/html'))
      reply.header('cache-control', 'no-store');
    return payload;
  });

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
    if (crossSite(request)) throw new AppError(ErrorCode.FORBIDDEN, 'Refused: this request came from another site.');
    // Forms only: a JSON body's numbers and objects are not what the form converters read.
    if (request.body !== undefined && !FORM_MEDIA_TYPE.test(request.headers['content-type'] ?? '')) {
      throw new AppError(
        ErrorCode.UNSUPPORTED_MEDIA_TYPE,
        'The console takes forms (application/x-www-form-urlencoded).',
      );
    }
    const fields = (request.body ?? {}) as FormFields;
    request.consoleFields = fields;
    if (request.consoleSession) {
      const presented = request.headers['x-csrf-token'] ?? fields._csrf;
      if (!ConsoleSessions.csrfMatches(request.consoleSession, presented)) {
        throw new AppError(
          ErrorCode.FORBIDDEN,
          'Refused: the form had no valid CSRF token. Reload the page and try again.',
        );
      }
    }
    const toBody = request.routeOptions.config.consoleForm;
    if (toBody) request.body = toBody(fields);
  });

  app.setErrorHandler((error, request, reply) => {
    const appError = toAppError(error);
    if (appError.code === ErrorCode.INTERNAL_ERROR) request.log.error({ err: error }, 'unexpected error');
    const back = backTarget(request.consoleFields);
    if (request.method === 'POST' && back && appError.statusCode < 500 && appError.code !== ErrorCode.FORBIDDEN) {
      setFlash(request, reply, { level: 'error', text: appError.message });
      return reply.redirect(back, 303);
    }
    return sendPage(reply, errorPage(appError, request.consoleView), appError.statusCode);
  });
  app.setNotFoundHandler((request, reply) =>
    sendPage(
      reply,
      errorPage(new AppError(ErrorCode.NOT_FOUND, `No console page at ${pathOnly(request.url)}.`), request.consoleView),
      404,
    ),
  );

  app.get('/assets/:name', { schema: { hide: true } }, async (request, reply) => {
    const { name } = request.params as { name: string };
    const asset = assets.get(name);
    if (!asset) throw new AppError(ErrorCode.NOT_FOUND);
    return reply.type(`${ASSET_TYPES[name]}; charset=utf-8`).header('cache-control', 'no-cache').send(asset);
  });

  app.get('/sign-in', { schema: { hide: true } }, async (_request, reply) => sendPage(reply, signInPage(null)));
  // Open to anyone: whoever signs in gets their own role's session.
  app.post('/sign-in', { schema: { hide: true }, config: { operatorRole: 'read-only' } }, async (request, reply) => {
    const field = (request.body as FormFields | undefined)?.token;
    const token = typeof field === 'string' ? field : '';
    const presented = createHmac('sha256', key).update(token).digest();
    const expected = createHmac('sha256', key).update(context.config.adminToken).digest();
    const operator = timingSafeEqual(presented, expected)
      ? BOOTSTRAP_ADMIN
      : await resolveOperatorToken(context.db, context.caches, token);
    if (!operator) {
      await limits.authenticationFailed(request, reply);
      // Within the failed-authentication budget only: past it the 429 above answers, unrecorded.
      await recordFailedSignIn(context, request, token);
      return sendPage(reply, signInPage('That is neither an operator token nor the admin token.'), 401);
    }
    const started = await sessions.start(operator);
    reply.setCookie(SESSION_COOKIE, started.token, cookieOptions(request, SESSION_HOURS * 3600));
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
  await app.register(invoiceRoutes, deps);
  await app.register(callbackRoutes, deps);
  await app.register(partnerKeyRoutes, deps);
  await app.register(promptRoutes, deps);
  await app.register(geoRoutes, deps);
  await app.register(operatorRoutes, deps);
  await app.register(auditRoutes, deps);
}
