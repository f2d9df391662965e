// What the server-rendered pages (the operators' console, the partner portal) share to be safe in a
// browser: a Content-Security-Policy without inline script, plain forms only, every state-changing
// request from our own site with the session's CSRF token, session cookies signed, HttpOnly and
// SameSite, pages never cached, and their stylesheet and script served from our own origin.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import cookie from '@fastify/cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ErrorCode } from '../../errors.js';
import { projectRoot } from '../../paths.js';
import { unacceptableString } from '../../text.js';
import type { HostApp } from '../host.js';
import type { Html } from '../html.js';

/** A submitted form: each field's value, or its values when repeated (checkboxes). */
export type FormFields = Record<string, string | string[]>;

export const FORM_MEDIA_TYPE = /^application\/x-www-form-urlencoded\s*(;|$)/i;

/** The policy of every page: nothing inline, nothing from elsewhere; framed only by `frameAncestors`. */
export function contentSecurityPolicy(frameAncestors: string): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "form-action 'self'",
    `frame-ancestors ${frameAncestors}`,
    "base-uri 'none'",
  ].join('; ');
}

function parseForm(_request: FastifyRequest, body: string, done: (error: Error | null, body?: unknown) => void) {
  const fields: FormFields = {};
  for (const [name, value] of new URLSearchParams(body)) {
    const present = fields[name];
    fields[name] = present === undefined ? value : [present, value].flat();
  }
  const problem = unacceptableString(fields, 'body');
  done(problem ? new AppError(ErrorCode.VALIDATION_ERROR, `${problem.field}: ${problem.message}`) : null, fields);
}

interface PageHostOptions {
  /** Signs the cookies. */
  cookieSecret: Buffer;
  /** CSP `frame-ancestors`: `'none'`, or the origins allowed to embed the pages. */
  frameAncestors: string;
}

/** Cookies, form bodies and the headers of every answer, for a plugin serving pages. */
export async function servePages(app: HostApp, { cookieSecret, frameAncestors }: PageHostOptions): Promise<void> {
  await app.register(cookie, { secret: cookieSecret });
  app.addContentTypeParser(FORM_MEDIA_TYPE, { parseAs: 'string' }, parseForm);
  const policy = contentSecurityPolicy(frameAncestors);
  const framed = frameAncestors !== "'none'";
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('content-security-policy', policy);
    // CSP decides who may frame the pages; helmet's X-Frame-Options would forbid every embedding.
    if (framed) reply.removeHeader('x-frame-options');
    // Not helmet's no-referrer: under it browsers send `Origin: null` with forms, which the
    // Origin check must refuse. Nothing leaves for other sites either way.
    reply.header('referrer-policy', 'same-origin');
    if (String(reply.getHeader('content-type') ?? '').startsWith('text/html'))
      reply.header('cache-control', 'no-store');
    return payload;
  });
}

/** A request from another site: its Origin (or Sec-Fetch-Site) says so. */
function crossSite(request: FastifyRequest): boolean {
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== `${request.protocol}://${request.host}`) return true;
  return request.headers['sec-fetch-site'] === 'cross-site';
}

/**
 * The checks of a state-changing request, after its body is parsed and before anything changes:
 * from our own site, a form, and carrying `csrfToken` when there is a session (a form without one,
 * like a sign-in, relies on the Origin check and the SameSite cookie). Its fields.
 */
export function checkedForm(request: FastifyRequest, csrfToken: string | null): FormFields {
  if (crossSite(request)) throw new AppError(ErrorCode.FORBIDDEN, 'Refused: this request came from another site.');
  // Forms only: a JSON body's numbers and objects are not what the form converters read.
  if (request.body !== undefined && !FORM_MEDIA_TYPE.test(request.headers['content-type'] ?? '')) {
    throw new AppError(ErrorCode.UNSUPPORTED_MEDIA_TYPE, 'These pages take forms (application/x-www-form-urlencoded).');
  }
  const fields = (request.body ?? {}) as FormFields;
  if (csrfToken !== null && !tokensMatch(csrfToken, request.headers['x-csrf-token'] ?? fields._csrf)) {
    throw new AppError(
      ErrorCode.FORBIDDEN,
      'Refused: the form had no valid CSRF token. Reload the page and try again.',
    );
  }
  return fields;
}

/** Constant-time comparison of a presented token with the expected one. */
function tokensMatch(expected: string, presented: unknown): boolean {
  if (typeof presented !== 'string') return false;
  const wanted = Buffer.from(expected);
  const given = Buffer.from(presented);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}

/** A session's CSRF token, derived from its token with a key of the host's: never stored. */
export function csrfTokenOf(key: Buffer, sessionToken: string): string {
  return createHmac('sha256', key).update(sessionToken).digest('base64url');
}

/** The value of a signed cookie, when present and its signature holds. */
export function signedCookie(request: FastifyRequest, name: string): string | undefined {
  const raw = request.cookies[name];
  const unsigned = raw ? request.unsignCookie(raw) : null;
  return unsigned?.valid ? (unsigned.value ?? undefined) : undefined;
}

export interface CookieScope {
  path: string;
  /**
   * `strict` or `lax`; `none` for pages embedded by another site, whose frame would not send a
   * SameSite cookie (then Secure and Partitioned, as browsers require).
   */
  sameSite: 'strict' | 'lax' | 'none';
}

export function cookieOptions(request: FastifyRequest, scope: CookieScope, maxAgeSeconds: number) {
  return {
    path: scope.path,
    httpOnly: true,
    sameSite: scope.sameSite,
    secure: scope.sameSite === 'none' || request.protocol === 'https',
    ...(scope.sameSite === 'none' && { partitioned: true }),
    signed: true,
    maxAge: maxAgeSeconds,
  };
}

export function sendPage(reply: FastifyReply, page: Html, status = 200): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').send(page.text);
}

const ASSET_TYPES: Record<string, string> = { '.css': 'text/css', '.js': 'text/javascript', '.svg': 'image/svg+xml' };

/**
 * `GET /assets/:name` serving `files` (name in the URL → path from the project root), read once.
 * Revalidated at every use: a new release's stylesheet is never mixed with old pages for long.
 */
export function serveAssets(app: HostApp, files: Record<string, string>): void {
  const assets = new Map(
    Object.entries(files).map(([name, file]) => [
      name,
      {
        type: `${ASSET_TYPES[path.extname(file)]}; charset=utf-8`,
        text: readFileSync(path.join(projectRoot, file), 'utf8'),
      },
    ]),
  );
  app.get('/assets/:name', { schema: { hide: true } }, async (request, reply) => {
    const asset = assets.get((request.params as { name: string }).name);
    if (!asset) throw new AppError(ErrorCode.NOT_FOUND);
    return reply.type(asset.type).header('cache-control', 'no-cache').send(asset.text);
  });
}
