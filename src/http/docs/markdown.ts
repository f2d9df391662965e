// Markdown to HTML for the public docs pages (the partner guide, the OpenAPI descriptions), with
// markdown-it's safe defaults: raw HTML in the source is escaped, never passed through, and links
// to `javascript:`, `vbscript:`, `file:` and `data:` are not made. Headings get ids, so a
// section of the guide can be linked to.
import MarkdownIt from 'markdown-it';
import { Html } from '../html.js';

const markdown = new MarkdownIt({ html: false, linkify: false, typographer: false });

/** A heading's text as an id: lower case, words joined by hyphens (`8. Testing on your own` → `8-testing-on-your-own`). */
export function slugOf(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s-]/gu, '')
    .trim()
    .replace(/\s+/g, '-');
}

markdown.core.ruler.push('heading_ids', (state) => {
  const { tokens } = state;
  tokens.forEach((token, index) => {
    if (token.type === 'heading_open') token.attrSet('id', slugOf(tokens[index + 1]?.content ?? ''));
  });
});

/** markdown-it's HTML, trusted as it is: it escapes what the source holds. */
export const renderMarkdown = (source: string): Html => new Html(markdown.render(source));
export const renderInlineMarkdown = (source: string): Html => new Html(markdown.renderInline(source));
