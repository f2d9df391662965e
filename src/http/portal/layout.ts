// The page shell every portal page shares, in the session's language and direction: the tenant,
// the mode and the access at the top, the sections, and forms that carry the CSRF token.
import type { PortalSession } from '../../tenants/index.js';
import { type Html, html } from '../html.js';
import { badge } from '../pages/blocks.js';
import type { Locale } from './locale.js';
import type { MessageKey } from './messages/en.js';

export type Section = 'overview' | 'requests' | 'callbacks' | 'endpoint' | 'test';

const SECTIONS: [Section, MessageKey, string][] = [
  ['overview', 'nav.overview', '/'],
  ['requests', 'nav.requests', '/payment-requests'],
  ['callbacks', 'nav.callbacks', '/callbacks'],
  ['endpoint', 'nav.endpoint', '/endpoint'],
  ['test', 'nav.test', '/test-invoice'],
];

/** What every page of a session is rendered with. */
export interface View {
  locale: Locale;
  session: PortalSession;
  csrfToken: string;
  /** A notice of the action just done (from the catalogue), or null. */
  notice: string | null;
}

export const ASSET_PATHS = { css: '/assets/pages.css', js: '/assets/portal.js' };

/** The document around `main`, in `locale`'s language and direction. */
export function shell(locale: Locale, title: string, header: Html | null, main: Html): Html {
  return html`<!doctype html>
<html lang="${locale.language}" dir="${locale.dir}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · ${locale.t('portal.title')}</title>
<link rel="stylesheet" href="${ASSET_PATHS.css}">
<script src="${ASSET_PATHS.js}" defer></script>
</head>
<body>
<header class="top"><span class="brand">${locale.t('portal.title')}</span>${header}</header>
<main>${main}</main>
</body>
</html>`;
}

/** A page of a session: its sections (`section` the current one; null on an error page), then `content`. */
export function page(view: View, section: Section | null, title: string, content: Html): Html {
  const { locale, session } = view;
  const t = locale.t;
  const links = SECTIONS.filter(([name]) => name !== 'test' || session.mode === 'test').map(
    ([name, label, path]) =>
      html`<a href="${path}"${name === section ? html` aria-current="page"` : ''}>${t(label)}</a>`,
  );
  const summary = t('session.summary', {
    tenant: session.tenantName,
    mode: t(session.mode === 'test' ? 'session.test' : 'session.live'),
    access: t(session.access === 'write' ? 'session.readWrite' : 'session.readOnly'),
  });
  const header = html`<nav aria-label="${t('nav.main')}">${links}</nav><span class="who">${summary}</span>${postForm(
    view,
    '/sign-out',
    html`<button class="link">${t('session.signOut')}</button>`,
    'inline',
  )}`;
  const banner =
    session.mode === 'test' &&
    html`<p class="flash warning">${badge(t('session.test'), 'test')} ${t('session.testBanner')}</p>`;
  const notice = view.notice && html`<p class="flash ok" role="status">${view.notice}</p>`;
  return shell(locale, title, header, html`${banner}${notice}<h1>${title}</h1>${content}`);
}

/** A POST form to a portal path, carrying the session's CSRF token. */
export function postForm(view: View, path: string, content: Html, className = 'stack'): Html {
  return html`<form method="post" action="${path}" class="${className}"><input type="hidden" name="_csrf" value="${view.csrfToken}">${content}</form>`;
}

/** "Newer" and "Older" links around "page n of m", keeping the list's filters. */
export function pager(
  locale: Locale,
  path: string,
  filters: Record<string, string | undefined>,
  pageNumber: number,
  pages: number,
): Html {
  if (pages <= 1) return html``;
  const link = (target: number) => {
    const query = new URLSearchParams(
      Object.entries({ ...filters, page: String(target) }).filter((entry): entry is [string, string] => !!entry[1]),
    );
    return `${path}?${query}`;
  };
  const t = locale.t;
  return html`<nav class="pager" aria-label="${t('pager.label')}">${
    pageNumber > 1 && html`<a href="${link(pageNumber - 1)}" rel="prev">${t('pager.newer')}</a>`
  }<span>${t('pager.page', { page: locale.number(pageNumber), pages: locale.number(pages) })}</span>${
    pageNumber < pages && html`<a href="${link(pageNumber + 1)}" rel="next">${t('pager.older')}</a>`
  }</nav>`;
}

/** A list's filter by one of `choices` (value, label), "all" first; applied on change with the script. */
export function choiceFilter(
  locale: Locale,
  name: string,
  label: MessageKey,
  selected: string | undefined,
  choices: [string, string][],
): Html {
  const option = (value: string, text: string) =>
    html`<option value="${value}"${(selected ?? '') === value ? html` selected` : ''}>${text}</option>`;
  return html`<label>${locale.t(label)} <select name="${name}" data-autosubmit>${option('', locale.t('filter.all'))}${choices.map(
    ([value, text]) => option(value, text),
  )}</select></label>`;
}
