// How console routes answer: pages as HTML, actions as a redirect carrying a one-time notice (a
// signed cookie read by the next page), or as a page when it shows a secret once.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import { type CookieScope, cookieOptions, type FormFields, sendPage } from '../../pages/protection.js';
import type { Html } from './html.js';
import { CONSOLE_PREFIX, consoleUrl, type Flash } from './layout.js';

export { type FormFields, sendPage } from '../../pages/protection.js';

/** What a state-changing console request answers: a page (a secret shown once) or a redirect. */
export type ActionResult = Html | { redirect: string; notice: string };

export interface ConsoleDependencies {
  context: AppContext;
}

export const SESSION_COOKIE = 'pi_console_session';
const FLASH_COOKIE = 'pi_console_flash';

/** The console is never embedded, and its sign-in is a form of its own: its cookies are Strict. */
export const CONSOLE_COOKIES: CookieScope = { path: CONSOLE_PREFIX, sameSite: 'strict' };

export function setFlash(request: FastifyRequest, reply: FastifyReply, flash: Flash): void {
  reply.setCookie(FLASH_COOKIE, JSON.stringify(flash), cookieOptions(request, CONSOLE_COOKIES, 60));
}

/** The notice left by the previous action, once. */
export function takeFlash(request: FastifyRequest, reply: FastifyReply): Flash | null {
  const raw = request.cookies[FLASH_COOKIE];
  if (!raw) return null;
  reply.clearCookie(FLASH_COOKIE, { path: CONSOLE_PREFIX });
  const unsigned = request.unsignCookie(raw);
  try {
    return unsigned.valid && unsigned.value ? (JSON.parse(unsigned.value) as Flash) : null;
  } catch {
    return null;
  }
}

export function answer(reply: FastifyReply, result: ActionResult): FastifyReply {
  if ('redirect' in result) {
    setFlash(reply.request, reply, { level: 'ok', text: result.notice });
    return reply.redirect(consoleUrl(result.redirect), 303);
  }
  return sendPage(reply, result);
}

/** A form field as text: trimmed, '' when absent. */
export function text(fields: FormFields, name: string): string {
  const value = fields[name];
  return (Array.isArray(value) ? value[0] : (value ?? '')).trim();
}

/** A form field as text, or undefined when left empty. */
export function optionalText(fields: FormFields, name: string): string | undefined {
  return text(fields, name) || undefined;
}

/** Every value of a repeated field (checkboxes, list rows). */
export function texts(fields: FormFields, name: string): string[] {
  const value = fields[name];
  return value === undefined ? [] : [value].flat();
}

/** The page a form came from (its `_back` field), when it is one of the console's own. */
export function backTarget(fields: FormFields | undefined): string | null {
  const back = fields?._back;
  return typeof back === 'string' && /^\/console(\/[\w\-/.?=&%+]*)?$/.test(back) && !back.includes('//') ? back : null;
}

/** Where an action on a list goes afterwards: back to the list as it was (console-relative). */
export function backTo(fields: FormFields | undefined, fallback: string): string {
  return backTarget(fields)?.slice(CONSOLE_PREFIX.length) || fallback;
}
