// A host's OpenAPI document as one HTML page, rendered on the server from the live document: every
// operation (and every webhook we send) with its authentication, parameters, body fields, and each
// response with its examples. Nothing runs in the browser, so the page needs no script and no
// asset from elsewhere; every text from the document is escaped by the `html` tag or rendered as
// safe markdown.
import { type Html, html } from '../html.js';
import type { Json } from '../openapi.js';
import { renderInlineMarkdown, renderMarkdown } from './markdown.js';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
/** Nested fields shown in a schema's table, at most. */
const MAX_FIELD_DEPTH = 4;
const MAX_FIELDS = 80;

interface Operation {
  method: string;
  path: string;
  operation: Json;
}

const resolve = (document: Json, schema: Json | undefined): Json | undefined => {
  if (!schema?.$ref) return schema;
  const target = String(schema.$ref)
    .replace(/^#\//, '')
    .split('/')
    .reduce((node: Json | undefined, key) => node?.[key], document);
  return target && target !== schema ? resolve(document, target) : target;
};

/** A schema's type in a few words: `string (uuid)`, `array of Trip`, `one of a, b`. */
function typeOf(document: Json, schema: Json | undefined, depth = 0): string {
  if (!schema || depth > 5) return '';
  if (schema.$ref) return String(schema.$ref).split('/').pop()!;
  if ('const' in schema) return JSON.stringify(schema.const);
  if (Array.isArray(schema.enum))
    return `one of ${schema.enum.map((value: unknown) => JSON.stringify(value)).join(', ')}`;
  const choices: Json[] | undefined = schema.anyOf ?? schema.oneOf;
  if (choices) return choices.map((choice) => typeOf(document, choice, depth + 1)).join(' or ');
  const types: string[] = [schema.type ?? (schema.properties ? 'object' : 'any')].flat();
  return types
    .map((type) => {
      if (type === 'array') return `array of ${typeOf(document, schema.items, depth + 1) || 'any'}`;
      return schema.format && type !== 'null' ? `${type} (${schema.format})` : type;
    })
    .join(' or ');
}

interface Field {
  name: string;
  type: string;
  required: boolean;
  description: string;
}

/** The fields of an object schema, nested ones dotted (`data.results[].name`). */
function fieldsOf(document: Json, schema: Json | undefined, prefix = '', depth = 0, fields: Field[] = []): Field[] {
  const resolved = resolve(document, schema);
  if (!resolved || depth > MAX_FIELD_DEPTH || fields.length >= MAX_FIELDS) return fields;
  const object = resolve(document, resolved.type === 'array' ? resolved.items : resolved);
  const itemPrefix = resolved.type === 'array' ? `${prefix}[]` : prefix;
  const required = new Set<string>(object?.required ?? []);
  for (const [name, property] of Object.entries((object?.properties ?? {}) as Record<string, Json>)) {
    const target = resolve(document, property);
    fields.push({
      name: itemPrefix ? `${itemPrefix}.${name}` : name,
      type: typeOf(document, property),
      required: required.has(name),
      description: String(property.description ?? target?.description ?? ''),
    });
    fieldsOf(document, target, itemPrefix ? `${itemPrefix}.${name}` : name, depth + 1, fields);
  }
  return fields;
}

/** Fragments joined by `separator`, as one fragment. */
const joined = (fragments: Html[], separator = '\n'): Html =>
  html`${fragments.flatMap((fragment, index) => (index === 0 ? [fragment] : [html`${separator}`, fragment]))}`;

function table(headings: string[], rows: (Html | string)[][]): Html | '' {
  if (rows.length === 0) return '';
  const head = headings.map((heading) => html`<th>${heading}</th>`);
  const body = joined(rows.map((row) => html`<tr>${row.map((cell) => html`<td>${cell}</td>`)}</tr>`));
  return html`<table><thead><tr>${head}</tr></thead><tbody>\n${body}\n</tbody></table>`;
}

const methodBadge = (method: string) => html`<span class="method method-${method}">${method.toUpperCase()}</span>`;
const code = (text: string) => html`<code>${text}</code>`;
const json = (value: unknown) => html`<pre><code>${JSON.stringify(value, null, 2)}</code></pre>`;

function fieldTable(document: Json, schema: Json | undefined): Html | '' {
  return table(
    ['field', 'type', 'required', 'description'],
    fieldsOf(document, schema).map((field) => [
      code(field.name),
      field.type,
      field.required ? 'yes' : '',
      renderInlineMarkdown(field.description),
    ]),
  );
}

/** Each example of a media type, named when there are several. */
function examplesOf(media: Json): Html {
  if (media.example !== undefined) return json(media.example);
  return joined(
    Object.entries((media.examples ?? {}) as Record<string, Json>).map(
      ([name, example]) => html`<p class="example-name">${String(example.summary ?? name)}</p>${json(example.value)}`,
    ),
  );
}

function authenticationOf(document: Json, operation: Json): Html {
  const requirements: Json[] = operation.security ?? document.security ?? [];
  const names = requirements.flatMap((requirement) => Object.keys(requirement));
  if (names.length === 0) return html`<p class="auth">No credentials.</p>`;
  const schemes = document.components?.securitySchemes ?? {};
  const described = names.map((name) => {
    const scheme: Json = schemes[name] ?? {};
    const where = scheme.in === 'header' && html` (header ${code(String(scheme.name))})`;
    return html`<a href="#auth-${name}">${name}</a>${where}`;
  });
  return html`<p class="auth">Credentials: ${joined(described, ' or ')}.</p>`;
}

function parametersOf(document: Json, operation: Json): Html | '' {
  const parameters = ((operation.parameters ?? []) as Json[]).map((parameter) => resolve(document, parameter)!);
  const rows = parameters.map((parameter) => [
    code(String(parameter.name)),
    String(parameter.in),
    typeOf(document, parameter.schema),
    parameter.required ? 'yes' : '',
    renderInlineMarkdown(String(parameter.description ?? parameter.schema?.description ?? '')),
  ]);
  return rows.length > 0
    ? html`<h4>Parameters</h4>${table(['name', 'in', 'type', 'required', 'description'], rows)}`
    : '';
}

function requestBodyOf(document: Json, operation: Json): Html {
  const content = (resolve(document, operation.requestBody)?.content ?? {}) as Record<string, Json>;
  return joined(
    Object.entries(content).map(
      ([type, media]) =>
        html`<h4>Request body <span class="media">${type}</span></h4>${
          media.schema?.description && renderMarkdown(String(media.schema.description))
        }${fieldTable(document, media.schema)}${examplesOf(media)}`,
    ),
  );
}

function responsesOf(document: Json, operation: Json): Html | '' {
  const responses = Object.entries((operation.responses ?? {}) as Record<string, Json>).map(([status, raw]) => {
    const response = resolve(document, raw) ?? {};
    // The fields of what succeeds; an error's examples say all there is to it.
    const media = joined(
      Object.entries((response.content ?? {}) as Record<string, Json>).map(
        ([type, content]) =>
          html`<p class="media">${type}</p>${status.startsWith('2') && fieldTable(document, content.schema)}${examplesOf(content)}`,
      ),
    );
    return html`<details${status.startsWith('2') && html` open`}><summary><span class="status">${status}</span> ${renderInlineMarkdown(
      String(response.description ?? ''),
    )}</summary>${media}</details>`;
  });
  return responses.length > 0 ? html`<h4>Responses</h4>${joined(responses)}` : '';
}

const anchorOf = ({ method, path, operation }: Operation) =>
  String(operation.operationId ?? `${method}-${path}`).replace(/[^\w-]/g, '-');

function operationSection(document: Json, entry: Operation): Html {
  const { method, path, operation } = entry;
  return html`<section class="operation" id="${anchorOf(entry)}">
<h3>${methodBadge(method)} ${code(path)}</h3>
<p class="summary">${renderInlineMarkdown(String(operation.summary ?? ''))}</p>
${operation.description && renderMarkdown(String(operation.description))}
${authenticationOf(document, operation)}
${parametersOf(document, operation)}
${requestBodyOf(document, operation)}
${responsesOf(document, operation)}
</section>`;
}

function entriesOf(items: Record<string, Json> | undefined): Operation[] {
  return Object.entries(items ?? {}).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method]).map((method) => ({ method, path, operation: item[method] as Json })),
  );
}

function contents(groups: [string, Operation[]][]): Html {
  const items = groups.map(
    ([title, entries]) =>
      html`<li>${title}<ul>${entries.map(
        (entry) =>
          html`<li><a href="#${anchorOf(entry)}">${methodBadge(entry.method)} ${code(entry.path)}</a> ${renderInlineMarkdown(String(entry.operation.summary ?? ''))}</li>`,
      )}</ul></li>`,
  );
  return html`<nav class="contents"><h2>Operations</h2><ul>${joined(items)}</ul></nav>`;
}

function securitySection(document: Json): Html | '' {
  const schemes = Object.entries((document.components?.securitySchemes ?? {}) as Record<string, Json>);
  if (schemes.length === 0) return '';
  const items = schemes.map(
    ([name, scheme]) =>
      html`<dt id="auth-${name}">${name}: ${String(scheme.type)} in ${String(scheme.in ?? '')} ${code(String(scheme.name ?? ''))}</dt><dd>${renderMarkdown(String(scheme.description ?? ''))}</dd>`,
  );
  return html`<h2 id="authentication">Authentication</h2><dl>${joined(items)}</dl>`;
}

/** Operations grouped by their first tag, in the document's order. */
function byTag(entries: Operation[]): [string, Operation[]][] {
  const groups = new Map<string, Operation[]>();
  for (const entry of entries) {
    const tag = String(entry.operation.tags?.[0] ?? 'other');
    groups.set(tag, [...(groups.get(tag) ?? []), entry]);
  }
  return [...groups];
}

/** The body of the reference page of `document`, whose JSON is served at `documentPath`. */
export function renderReference(built: object, documentPath: string): Html {
  const document = built as Json;
  const groups = byTag(entriesOf(document.paths));
  const webhooks = entriesOf(document.webhooks).map((entry) => ({ ...entry, path: `webhook ${entry.path}` }));
  const sections = groups.map(
    ([tag, entries]) =>
      html`<h2 id="tag-${tag}">${tag}</h2>\n${joined(entries.map((entry) => operationSection(document, entry)))}`,
  );
  const sent =
    webhooks.length > 0 &&
    html`<h2 id="webhooks">What we send you</h2>\n${joined(webhooks.map((entry) => operationSection(document, entry)))}`;
  const servers = ((document.servers ?? []) as Json[]).map((server) => code(String(server.url)));
  return html`<h1>${String(document.info?.title ?? 'API reference')}</h1>
<p class="meta">OpenAPI ${String(document.openapi ?? '')}, version ${String(document.info?.version ?? '')}${servers.length > 0 && html`; server ${joined(servers, ', ')}`}. The document itself: <a href="${documentPath}">${documentPath}</a>, for code generators and API tools.</p>
${renderMarkdown(String(document.info?.description ?? ''))}
${contents(webhooks.length ? [...groups, ['what we send you', webhooks]] : groups)}
${securitySection(document)}
${joined(sections)}
${sent}`;
}
