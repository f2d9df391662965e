// The page shell every console page shares, and the building blocks its pages repeat: forms that
// carry the CSRF token, buttons that ask before they act, secrets shown once.
import { type OperatorRole, roleAllows } from '../../../operators/index.js';
import { type Html, html } from './html.js';
import { SESSION_HOURS } from './sessions.js';

export { badge, table } from '../../pages/blocks.js';

export const CONSOLE_PREFIX = '/console';

export type Section = 'home' | 'tenants' | 'invoices' | 'partner-keys' | 'prompts' | 'geo' | 'operators' | 'audit';

const SECTIONS: [Section, string, string][] = [
  ['home', 'Home', '/'],
  ['tenants', 'Tenants', '/tenants'],
  ['invoices', 'Invoices', '/invoices'],
  ['partner-keys', 'Partner keys', '/partner-keys'],
  ['prompts', 'Prompts', '/prompts'],
  ['geo', 'Geo', '/geo'],
  ['operators', 'Operators', '/operators'],
  ['audit', 'Audit', '/audit'],
];

export interface Flash {
  level: 'ok' | 'error';
  text: string;
}

/** What every page of a signed-in operator is rendered with. */
export interface View {
  csrfToken: string;
  /** Who is signed in, with their role. */
  signedInAs: string;
  /** Their role: the page shows only the controls it allows. */
  role: OperatorRole;
  flash: Flash | null;
  /** This page's path and query: where a refused form comes back to. */
  path: string;
}

export const consoleUrl = (path: string) => `${CONSOLE_PREFIX}${path}`;

/** The console's icon: without it every page asks the listener for a /favicon.ico it does not have. */
export const ICON_LINK = html`<link rel="icon" type="image/svg+xml" href="${consoleUrl('/assets/favicon.svg')}">`;

function shell(title: string, nav: Html | null, main: Html): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Partner Integrations console</title>
${ICON_LINK}
<link rel="stylesheet" href="${consoleUrl('/assets/console.css')}">
<script src="${consoleUrl('/assets/console.js')}" defer></script>
</head>
<body>
<header class="top"><a class="brand" href="${consoleUrl('/')}">Partner Integrations</a>${nav}</header>
<main>${main}</main>
</body>
</html>`;
}

/** Whether the signed-in operator may use a control that needs `role` (operator: any change). */
export const may = (view: View, role: OperatorRole = 'operator') => roleAllows(view.role, role);

/** A page of the console, with its navigation; `section` null: none of them (an error page). */
export function page(view: View, section: Section | null, title: string, content: Html): Html {
  const links = SECTIONS.map(
    ([name, label, path]) =>
      html`<a href="${consoleUrl(path)}"${name === section ? html` aria-current="page"` : ''}>${label}</a>`,
  );
  const nav = html`<nav>${links}<span class="muted">${view.signedInAs}</span>${postForm(
    view,
    '/sign-out',
    html`<button class="link">Sign out</button>`,
    {
      className: 'inline',
      role: 'read-only',
    },
  )}</nav>`;
  const flash = view.flash && html`<p class="flash ${view.flash.level}" role="status">${view.flash.text}</p>`;
  return shell(title, nav, html`${flash}<h1>${title}</h1>${content}`);
}

/** The sign-in page: the only page without a session. */
export function signInPage(error: string | null): Html {
  return shell(
    'Sign in',
    null,
    html`<h1>Sign in</h1>
<form method="post" action="${consoleUrl('/sign-in')}" class="card narrow">
${error && html`<p class="flash error" role="alert">${error}</p>`}
<label>Your token <input type="password" name="token" required autocomplete="off" autofocus></label>
<p class="hint">Your operator token (<code>pio_…</code>), or the service's <code>ADMIN_TOKEN</code>. It is exchanged for a session of ${SESSION_HOURS} hours and not kept in this browser.</p>
<button>Sign in</button>
</form>`,
  );
}

export interface FormOptions {
  /** Asked before submitting (with the script; without it the form submits at once). */
  confirm?: string;
  className?: string;
  method?: 'post' | 'get';
  /** The least role its route needs (default: operator, as for every change): others see nothing. */
  role?: OperatorRole;
}

/**
 * A POST form to a console path, carrying the session's CSRF token; nothing for an operator whose
 * role may not use it (a read-only operator sees no Deactivate, Revoke or Issue button).
 */
export function postForm(view: View, path: string, content: Html, options: FormOptions = {}): Html {
  if (!may(view, options.role)) return html``;
  return html`<form method="post" action="${consoleUrl(path)}"${options.className && html` class="${options.className}"`}${
    options.confirm && html` data-confirm="${options.confirm}"`
  }><input type="hidden" name="_csrf" value="${view.csrfToken}"><input type="hidden" name="_back" value="${view.path}">${content}</form>`;
}

/** One secret, shown once, with a copy button. */
export function secretBlock(label: string, secret: string, id: string): Html {
  return html`<div class="secret"><label for="${id}">${label}</label>
<div class="secret-row"><input id="${id}" class="mono" readonly value="${secret}" data-secret><button type="button" data-copy="${id}">Copy</button></div></div>`;
}

export const secretWarning = html`<p class="flash warning" role="alert"><strong>Copy these now.</strong> They are shown once and will not be shown again: only their digests are kept.</p>`;

/** "Previous" and "Next" links for a listing with `page` in its query. */
export function pager(path: string, query: Record<string, string | undefined>, pageNumber: number, more: boolean) {
  const link = (target: number) => {
    const params = new URLSearchParams(
      Object.entries({ ...query, page: String(target) }).filter((entry): entry is [string, string] => !!entry[1]),
    );
    return consoleUrl(`${path}?${params}`);
  };
  return html`<nav class="pager">${pageNumber > 1 && html`<a href="${link(pageNumber - 1)}" rel="prev">← Newer</a>`}<span>Page ${pageNumber}</span>${
    more && html`<a href="${link(pageNumber + 1)}" rel="next">Older →</a>`
  }</nav>`;
}
