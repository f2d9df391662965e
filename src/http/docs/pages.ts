// The public docs of a partner-facing host, under `/docs/`, for anyone and without credentials:
// the partner guide (docs/partners.md) as a page, the host's OpenAPI document as a reference page,
// and, on the integrations host, the partner tools as one file to download and run with Node.
//
// Outside the host's API pipeline on purpose: no credential (a partner reads these before it has
// one), no rate limit (the pages are rendered once per process from files and the live document,
// cheaper to answer than the credential check would be, like `/healthz`), not in the envelope or
// `{"detail"}` (they are pages, not API answers), and no CORS header (DECISIONS §3). No script
// runs in them: a Content-Security-Policy allows this site's stylesheet and nothing else.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { AppError, ErrorCode } from '../../errors.js';
import { PAYMENT_FLOW_PICTURE } from '../../paths.js';
import { renderScopeErrorsWith } from '../errors.js';
import { type Html, html } from '../html.js';
import { renderMarkdown } from './markdown.js';
import { renderReference } from './reference.js';
import { DOCS_STYLESHEET } from './style.js';

export const DOCS_PREFIX = '/docs';

const DOCS_ERROR_TEXT: Partial<Record<ErrorCode, string>> = {
  NOT_FOUND: `Not found. The docs start at ${DOCS_PREFIX}/.`,
  METHOD_NOT_ALLOWED: 'Method not allowed.',
};

const CONTENT_SECURITY_POLICY =
  "default-src 'none'; style-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export interface PublicDocsOptions {
  /** The host's name in page titles, e.g. `integrations host`. */
  host: string;
  /** The host's OpenAPI document, read when a page is first rendered (every route is registered by then). */
  document: () => object;
  /** Where the host serves that document as JSON. */
  documentPath: string;
  /** The partner guide (markdown), shown at `/docs/`; without it `/docs/` is the reference. */
  guideFile?: string;
  /** The guide in Arabic, shown right to left at `/docs/ar/`. */
  arabicGuideFile?: string;
  /** The guide's example URLs and this deployment's own, which the served pages show instead. */
  exampleUrls?: Record<string, string>;
  /** The single-file partner tools, served at `/docs/partner-tools.mjs`. */
  partnerToolsFile?: string;
}

interface Link {
  href: string;
  text: string;
}

/** A page's language: the guide's translation is read right to left. */
interface PageLanguage {
  lang: 'en' | 'ar';
  dir: 'ltr' | 'rtl';
}
const ENGLISH: PageLanguage = { lang: 'en', dir: 'ltr' };
const ARABIC: PageLanguage = { lang: 'ar', dir: 'rtl' };

function page(title: string, links: Link[], body: Html, language = ENGLISH): Html {
  const nav = links.map((link, index) => html`${index > 0 && '\n'}<a href="${link.href}">${link.text}</a>`);
  return html`<!doctype html>
<html lang="${language.lang}" dir="${language.dir}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="stylesheet" href="${DOCS_PREFIX}/docs.css">
</head>
<body>
<header><nav>${nav}</nav></header>
<main>
${body}
</main>
</body>
</html>
`;
}

/** Computed once, on first use: the inputs do not change while the process runs. */
function once<T>(compute: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () => {
    if (!value) {
      value = compute();
      // A failure (the guide's file unreadable) is tried again on the next request.
      value.catch(() => {
        value = undefined;
      });
    }
    return value;
  };
}

/** The guide's markdown with its example URLs replaced by this deployment's. */
async function guideSource(file: string, exampleUrls: Record<string, string>): Promise<string> {
  const source = await readFile(file, 'utf8');
  return Object.entries(exampleUrls).reduce((text, [example, own]) => text.replaceAll(example, own), source);
}

const sendHtml = (reply: FastifyReply, page: Html) => reply.type('text/html; charset=utf-8').send(page.text);

export const publicDocs: FastifyPluginAsync<PublicDocsOptions> = async (app, options) => {
  const { host, document, documentPath, guideFile, arabicGuideFile, partnerToolsFile } = options;
  const exampleUrls = options.exampleUrls ?? {};
  const links: Link[] = [
    ...(guideFile ? [{ href: `${DOCS_PREFIX}/`, text: 'Partner guide' }] : []),
    ...(arabicGuideFile ? [{ href: `${DOCS_PREFIX}/ar/`, text: 'دليل الشركاء' }] : []),
    { href: `${DOCS_PREFIX}/reference/`, text: 'API reference' },
    { href: documentPath, text: 'openapi.json' },
    ...(partnerToolsFile ? [{ href: `${DOCS_PREFIX}/partner-tools.mjs`, text: 'partner-tools.mjs' }] : []),
  ];
  const reference = once(async () => page(`API reference: ${host}`, links, renderReference(document(), documentPath)));
  const guide = guideFile
    ? once(async () => page(`Partner guide: ${host}`, links, renderMarkdown(await guideSource(guideFile, exampleUrls))))
    : reference;
  const arabicGuide = arabicGuideFile
    ? once(async () =>
        page(`دليل الشركاء`, links, renderMarkdown(await guideSource(arabicGuideFile, exampleUrls)), ARABIC),
      )
    : undefined;
  const partnerTools = partnerToolsFile ? once(() => readFile(partnerToolsFile)) : undefined;

  app.addHook('onSend', (_request, reply, payload, done) => {
    reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
    done(null, payload);
  });
  app.setNotFoundHandler((request) => {
    if (request.method === 'GET' || request.method === 'HEAD') throw new AppError(ErrorCode.NOT_FOUND);
    throw new AppError(ErrorCode.METHOD_NOT_ALLOWED);
  });
  // In plain text: these are pages, not API answers. Anything but a wrong path or method is a page
  // that could not be made (the one error handler has logged why).
  renderScopeErrorsWith(app, (error, _request, reply) => {
    if (error.code === ErrorCode.METHOD_NOT_ALLOWED) reply.header('allow', 'GET, HEAD');
    const text = DOCS_ERROR_TEXT[error.code];
    return reply
      .code(text ? error.statusCode : 500)
      .type('text/plain; charset=utf-8')
      .send(text ?? 'The docs page could not be made.');
  });

  const hidden = { schema: { hide: true } };
  app.get('/', hidden, async (_request, reply) => sendHtml(reply, await guide()));
  app.get('/reference/', hidden, async (_request, reply) => sendHtml(reply, await reference()));
  app.get('/docs.css', hidden, async (_request, reply) => reply.type('text/css; charset=utf-8').send(DOCS_STYLESHEET));
  if (arabicGuide) app.get('/ar/', hidden, async (_request, reply) => sendHtml(reply, await arabicGuide()));
  if (guideFile) {
    // The guide's pictures (docs/payment-flow.svg, docs/portal-*.png, docs/guide-*.png), beside it as
    // in the repository.
    const pictures = path.dirname(guideFile);
    app.get('/:picture', hidden, async (request, reply) => {
      const { picture } = request.params as { picture: string };
      const type = /^(portal|guide)-[a-z-]+\.png$/.test(picture)
        ? 'image/png'
        : picture === PAYMENT_FLOW_PICTURE
          ? 'image/svg+xml; charset=utf-8'
          : undefined;
      if (!type) return reply.callNotFound();
      const bytes = await readFile(path.join(pictures, picture)).catch(() => null);
      if (!bytes) return reply.callNotFound();
      return reply.type(type).header('cache-control', 'no-cache').send(bytes);
    });
  }
  if (partnerTools) {
    app.get('/partner-tools.mjs', hidden, async (_request, reply) =>
      reply.type('text/javascript; charset=utf-8').send(await partnerTools()),
    );
  }
};
