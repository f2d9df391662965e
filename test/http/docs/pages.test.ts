// The public docs: the partner guide and each host's API reference answer anyone, over real HTTP,
// with no credential and no CORS header; the guide shows every heading of docs/partners.md, the
// reference every operation of the live document (a route added later included); nothing in
// either can run a script.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderMarkdown, slugOf } from '../../../src/http/docs/markdown.js';
import { renderReference } from '../../../src/http/docs/reference.js';
import { escapeHtml } from '../../../src/http/html.js';
import { buildIntegrationsApp } from '../../../src/http/integrations/app.js';
import { operationsOf } from '../../../src/http/openapi.js';
import { createLogger } from '../../../src/logger.js';
import { arabicPartnerGuideFile, partnerGuideFile } from '../../../src/paths.js';
import { useApps } from '../../support/apps.js';
import { launchChromium } from '../../support/browser.js';

const service = useApps(['integrations', 'backend'], { listen: true });

/** A GET over real HTTP, as a browser with no credential would send it. */
async function get(host: 'integrations' | 'backend', path: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${service.urls[host]}${path}`, { headers, redirect: 'manual' });
  return { response, body: await response.text() };
}

function expectPage(response: Response) {
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
  expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
  expect([...response.headers.keys()].filter((name) => name.startsWith('access-control-'))).toEqual([]);
}

/** Each `METHOD path` of a document, as the reference page writes it. */
function operationLines(document: { paths: Record<string, Record<string, unknown>> }): string[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.keys(item).map((method) => `${method.toUpperCase()}</span> <code>${escapeHtml(path)}</code>`),
  );
}

describe('the integrations host', () => {
  it('serves the partner guide at /docs/, every heading linkable, with or without a credential', async () => {
    const guide = readFileSync(partnerGuideFile, 'utf8').replace(/```[\s\S]*?```/g, '');
    const headings = [...guide.matchAll(/^#{1,4} (.+)$/gm)].map((match) => match[1]);
    expect(headings.length).toBeGreaterThan(10);
    for (const headers of [{}, { authorization: 'Api-Key not-a-key' }] as Record<string, string>[]) {
      const { response, body } = await get('integrations', '/docs/', headers);
      expectPage(response);
      for (const heading of headings) expect(body, heading).toContain(`id="${slugOf(heading)}"`);
      expect(body).toContain('href="/docs/reference/"');
      expect(body).toContain('href="/docs/partner-tools.mjs"');
    }
  });

  it("shows this deployment's own URLs, the payment flow as a picture, and nothing a partner does not have", async () => {
    for (const path of ['/docs/', '/docs/ar/']) {
      const { body } = await get('integrations', path);
      expect(body, path).toContain(`${service.context.publicUrls.integrations}/api/v1/payments/notify/`);
      expect(body, path).toContain(`${service.context.publicUrls.backend}/v1/cities/`);
      expect(body, path).not.toMatch(/(partners|geo)\.example\.com/);
      expect(body, path).not.toMatch(/clients\/typescript|CHANGELOG|npm start|mermaid/);
      const [, picture] = /<img src="([^"]+\.svg)"/.exec(body) ?? [];
      const response = await fetch(new URL(picture!, `${service.urls.integrations}${path}`));
      expect(response.status, picture).toBe(200);
      expect(response.headers.get('content-type')).toBe('image/svg+xml; charset=utf-8');
      expect(await response.text()).toMatch(/^<svg [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    }
  });

  it('serves the Arabic guide at /docs/ar/, right to left, every heading linkable', async () => {
    const guide = readFileSync(arabicPartnerGuideFile, 'utf8').replace(/```[\s\S]*?```/g, '');
    const headings = [...guide.matchAll(/^#{1,4} (.+)$/gm)].map((match) => match[1]);
    const { response, body } = await get('integrations', '/docs/ar/');
    expectPage(response);
    expect(body).toContain('<html lang="ar" dir="rtl">');
    for (const heading of headings) expect(body, heading).toContain(`id="${slugOf(heading)}"`);
    expect((await get('integrations', '/docs/')).body).toContain('href="/docs/ar/"');
  });

  it("serves the guide's portal and Arabic guide pictures beside it, and nothing else of the docs directory", async () => {
    const { body } = await get('integrations', '/docs/');
    const pictures = [...body.matchAll(/<img src="((?:portal|guide)-[a-z-]+\.png)"/g)].map((match) => match[1]);
    // The portal's pages in two languages at two widths, and the Arabic guide at two widths.
    expect(pictures).toHaveLength(26);
    expect(pictures).toEqual(expect.arrayContaining(['guide-ar-desktop.png', 'guide-ar-phone.png']));
    for (const picture of pictures) {
      const response = await fetch(`${service.urls.integrations}/docs/${picture}`);
      expect(response.status, picture).toBe(200);
      expect(response.headers.get('content-type')).toBe('image/png');
      expect(
        Buffer.from(await response.arrayBuffer())
          .subarray(1, 4)
          .toString(),
      ).toBe('PNG');
    }
    for (const path of [
      '/docs/partners.md',
      '/docs/console-home.png',
      '/docs/portal-..%2Fpackage.png',
      '/docs/x.png',
    ]) {
      expect((await fetch(`${service.urls.integrations}${path}`)).status, path).toBe(404);
    }
  });

  it('serves a reference of every operation and webhook of its live document, and the document, without credentials', async () => {
    const documentResponse = await get('integrations', '/api/v1/openapi.json');
    expect(documentResponse.response.status).toBe(200);
    const document = JSON.parse(documentResponse.body);
    const { response, body } = await get('integrations', '/docs/reference/');
    expectPage(response);
    expect(body).not.toContain('<script');
    const operations = operationsOf(document);
    expect(operations.length).toBeGreaterThan(5);
    for (const operation of operations) expect(body, operation.operationId).toContain(`id="${operation.operationId}"`);
    for (const line of operationLines(document)) expect(body).toContain(line);
    expect(body).toContain('webhook payment.requested');
  });

  it('sends /api/v1/docs to the docs, and answers unknown docs paths and other methods plainly', async () => {
    const redirect = await get('integrations', '/api/v1/docs');
    expect(redirect.response.status).toBe(302);
    expect(redirect.response.headers.get('location')).toBe('/docs/');
    const missing = await get('integrations', '/docs/nothing');
    expect(missing.response.status).toBe(404);
    expect(missing.response.headers.get('content-type')).toMatch(/^text\/plain/);
    const post = await fetch(`${service.urls.integrations}/docs/`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    const preflight = await fetch(`${service.urls.integrations}/docs/`, {
      method: 'OPTIONS',
      headers: { origin: 'https://elsewhere.example', 'access-control-request-method': 'GET' },
    });
    expect([...preflight.headers.keys()].filter((name) => name.startsWith('access-control-'))).toEqual([]);
    expectPage((await get('integrations', '/docs')).response);
    const head = await fetch(`${service.urls.integrations}/docs/reference/`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    const style = await get('integrations', '/docs/docs.css');
    expect(style.response.headers.get('content-type')).toBe('text/css; charset=utf-8');
  });

  it('renders routes registered after the docs: the page comes from the live document', async () => {
    const app = await buildIntegrationsApp(service.context, createLogger('silent'));
    app.get(
      '/api/v1/added-later/',
      { schema: { operationId: 'addedLater', summary: 'A route another module adds', tags: ['later'] } },
      async () => ({}),
    );
    await app.ready();
    try {
      const page = await app.inject({ method: 'GET', url: '/docs/reference/' });
      expect(page.body).toContain('id="addedLater"');
      expect(page.body).toContain('A route another module adds');
    } finally {
      await app.close();
    }
  });
});

describe('the backend host', () => {
  it('serves the reference of its own document at /docs/, and the document, without credentials', async () => {
    const document = JSON.parse((await get('backend', '/v1/openapi.json')).body);
    for (const path of ['/docs/', '/docs/reference/']) {
      const { response, body } = await get('backend', path);
      expectPage(response);
      for (const line of operationLines(document)) expect(body, `${path} ${line}`).toContain(line);
    }
    expect((await get('backend', '/v1/docs')).response.headers.get('location')).toBe('/docs/');
  });
});

describe('in Chromium', () => {
  it('shows the pages styled, with nothing refused by their Content-Security-Policy', async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error' && !message.text().includes('404')) problems.push(message.text());
      });
      for (const path of ['/docs/', '/docs/ar/', '/docs/reference/#listCities']) {
        await page.goto(`${service.urls.integrations}${path}`);
        const header = await page.locator('header').evaluate((element) => getComputedStyle(element).position);
        expect(header, path).toBe('sticky');
      }
      expect(await page.locator('#listCities h3').textContent()).toContain('/api/v1/cities/');
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});

describe('what the pages render', () => {
  const hostile = '<script>alert(1)</script><img src=x onerror=alert(1)> [x](javascript:alert(1)) "quoted"';

  it('escapes raw HTML and drops script links in markdown', () => {
    const html = renderMarkdown(`# Title <b>\n\n${hostile}`).text;
    expect(html).not.toMatch(/<script|<img|href="javascript:|<b>/);
    expect(html).toContain('&lt;script&gt;');
  });

  it('escapes every text a document brings into the reference', () => {
    const document = {
      openapi: '3.1.0',
      info: { title: hostile, version: hostile, description: hostile },
      servers: [{ url: hostile }],
      components: {
        securitySchemes: { [hostile]: { type: 'apiKey', in: 'header', name: hostile, description: hostile } },
      },
      security: [{ [hostile]: [] }],
      paths: {
        [`/x/${hostile}/`]: {
          get: {
            operationId: hostile,
            summary: hostile,
            description: hostile,
            tags: [hostile],
            parameters: [
              { name: hostile, in: 'query', description: hostile, schema: { type: 'string', enum: [hostile] } },
            ],
            responses: {
              200: {
                description: hostile,
                content: {
                  'application/json': {
                    schema: { type: 'object', properties: { [hostile]: { type: 'string', description: hostile } } },
                    examples: { [hostile]: { summary: hostile, value: hostile } },
                  },
                },
              },
            },
          },
        },
      },
    };
    const html = renderReference(document, hostile).text;
    expect(html).not.toMatch(/<script|<img|href="javascript:/);
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
  });
});
