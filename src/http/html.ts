// HTML built from template literals, for the console and the docs pages: every interpolated value
// is escaped unless it is already `Html` (made by this tag), so a tenant's name or a partner's
// payload can never become markup. `escapeHtml` is the one escaping function.

export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text for an HTML element or a quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ESCAPES[char]);
}

type Interpolation = Html | string | number | boolean | null | undefined | readonly Interpolation[];

function render(value: Interpolation): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

/** The tag: `html\`<p>${name}</p>\`` escapes `name`; nested `html` fragments and arrays of them pass as is. */
export function html(strings: TemplateStringsArray, ...values: Interpolation[]): Html {
  let text = strings[0];
  for (let i = 0; i < values.length; i++) text += render(values[i]) + strings[i + 1];
  return new Html(text);
}
