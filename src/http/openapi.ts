// What the three hosts' OpenAPI documents share once @fastify/swagger has built them: `servers`
// from the public URL settings, OpenAPI 3.1 tuples, and an example on every request and response
// that has none of its own, built from the schema (and the `examples` of the schemas inside it).
// And the one way a host documents the error responses its routes share.
import type { FastifyInstance, RouteOptions } from 'fastify';

// biome-ignore lint/suspicious/noExplicitAny: an OpenAPI document is walked as untyped JSON
export type Json = Record<string, any>;

export const EXAMPLE_UUID = '3f1c2b9e-8d4a-4c6f-9b2e-7a5d1e0c4b8a';
const FORMAT_EXAMPLES: Record<string, unknown> = {
  uuid: EXAMPLE_UUID,
  'date-time': '2026-01-15T09:30:00.000Z',
  date: '2026-01-15',
  uri: 'https://example.com/',
};

/** Examples of plain text fields by name, so generated examples read like real ones. */
const TEXT_BY_FIELD: Record<string, string> = {
  name: 'Acme Travel',
  name_ar: 'الرياض',
  slug: 'acme',
  gateway: 'tap',
  amount: '100.00',
  currency: 'SAR',
  code: 'SA',
  phone_code: '+966',
  text: 'What can I do in Riyadh this weekend?',
  title: 'Riyadh weekend',
  description: 'A walk through the old town',
  time: '09:30',
  kind: 'partner_api_key',
  hint: 'pis_pay_3kQ…',
  sso_hmac_secret: 'pis_sso_7Jq2mXc9R4tY1vB8nL6pZ0wE5sD3fG2hK9aQ4uI1oP',
  partner_api_key: 'pis_pay_3kQv8Lr2Nw5Xy7Zb1Mc4Df6Gh9Jk0Pq2Rs5Tu8Vw1',
  payment_endpoint_secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  secret: 'pis_sso_7Jq2mXc9R4tY1vB8nL6pZ0wE5sD3fG2hK9aQ4uI1oP',
  key: 'pis_bk_Xr4Tq9Lm2Wn7Vb5Cz1Hd8Fg3Jk6Ps0Qa2Se4Ud7Yi9',
  payment_endpoint_url: 'https://pay.acme.example/requests',
  payment_url: 'https://pay.acme.example/session/8f2c1a',
  transaction_id: 'chg_TS02A5720231433Qs1w0809820',
  gateway_reference: 'chg_TS02A5720231433Qs1w0809820',
  webhook_id: 'msg_ping_3f1c2b9e-8d4a-4c6f-9b2e-7a5d1e0c4b8a',
  endpoint_url: 'https://pay.acme.example/requests',
  message: 'OK.',
  status: 'pending',
  error: 'endpoint answered HTTP 503',
};

const resolveRef = (document: Json, ref: string): Json =>
  ref
    .replace(/^#\//, '')
    .split('/')
    .reduce((node: Json, key) => node?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], document);

function scalarExample(schema: Json): unknown {
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== 'null') : schema.type;
  switch (type) {
    case 'string':
      return FORMAT_EXAMPLES[schema.format] ?? 'string';
    case 'integer':
    case 'number':
      return schema.minimum ?? 1;
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return undefined;
  }
}

/** The schema's own example, when it states one. */
function statedExample(schema: Json): { value: unknown } | null {
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return { value: schema.examples[0] };
  if ('example' in schema) return { value: schema.example };
  if ('const' in schema) return { value: schema.const };
  if (Array.isArray(schema.enum))
    return { value: schema.enum.find((value: unknown) => value !== '') ?? schema.enum[0] };
  return null;
}

/** A value that fits `schema`: its own example when it has one, else one built from its parts. */
export function exampleOf(schema: Json | undefined, document: Json, depth = 0): unknown {
  if (!schema || depth > 20) return undefined;
  const part = (child: Json) => exampleOf(child, document, depth + 1);
  const fieldExample = (name: string, child: Json) => {
    const value = part(child);
    return value === 'string' && TEXT_BY_FIELD[name] ? TEXT_BY_FIELD[name] : value;
  };
  if (schema.$ref) return part(resolveRef(document, schema.$ref));
  const stated = statedExample(schema);
  if (stated) return stated.value;
  const choices: Json[] | undefined = schema.anyOf ?? schema.oneOf;
  if (choices) return part(choices.find((choice) => choice.type !== 'null') ?? choices[0]);
  if (schema.allOf) return Object.assign({}, ...schema.allOf.map(part));
  if (schema.type === 'object' || schema.properties) {
    return Object.fromEntries(
      Object.entries(schema.properties ?? {}).map(([name, property]) => [name, fieldExample(name, property as Json)]),
    );
  }
  if (schema.type === 'array') {
    if (schema.prefixItems) return schema.prefixItems.map(part);
    return schema.items ? [part(schema.items)] : [];
  }
  return scalarExample(schema);
}

/** Draft-07 tuples (TypeBox's `Type.Tuple`: `items: [...]`) as OpenAPI 3.1 wants them: `prefixItems`. */
function tuplesToPrefixItems(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) tuplesToPrefixItems(item);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const schema = node as Json;
  if (Array.isArray(schema.items)) {
    schema.prefixItems = schema.items;
    schema.items = schema.additionalItems ?? false;
    delete schema.additionalItems;
  }
  for (const value of Object.values(schema)) tuplesToPrefixItems(value);
}

function addMissingExamples(content: Json | undefined, document: Json): void {
  for (const media of Object.values(content ?? {}) as Json[]) {
    if (media.example !== undefined || media.examples !== undefined || !media.schema) continue;
    const example = exampleOf(media.schema, document);
    if (example !== undefined) media.example = example;
  }
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Every operation of the document (and of its `webhooks`). */
export function operationsOf(document: Json): Json[] {
  return [...Object.values(document.paths ?? {}), ...Object.values(document.webhooks ?? {})].flatMap((item) =>
    METHODS.filter((method) => (item as Json)[method]).map((method) => (item as Json)[method] as Json),
  );
}

export interface DocumentFinish {
  /** Read when the document is built (after the listeners have their ports). */
  servers: () => { url: string; description?: string }[];
  /** What the host sends rather than serves (OpenAPI 3.1 `webhooks`). */
  webhooks?: Json;
}

/**
 * A route schema's mark for a body that may be left out (its fields all optional): the route reads
 * an absent body as `{}` (mountScope), and its document says the body is not required. An `x-` key,
 * which @fastify/swagger copies onto the operation.
 */
export const BODY_OPTIONAL = 'x-body-optional';

/** The `transformObject` of @fastify/swagger that finishes a host's document. */
export function finishDocument({ servers, webhooks }: DocumentFinish) {
  // @fastify/swagger types the argument as a Swagger 2 or an OpenAPI object; ours are OpenAPI.
  return (built: object): Json => {
    // A copy: what @fastify/swagger hands over may share objects with the live route schemas.
    const openapiObject: Json = JSON.parse(JSON.stringify((built as { openapiObject: Json }).openapiObject));
    if (webhooks) openapiObject.webhooks = JSON.parse(JSON.stringify(webhooks));
    tuplesToPrefixItems(openapiObject);
    openapiObject.servers = servers();
    for (const operation of operationsOf(openapiObject)) {
      // @fastify/swagger marks every body required.
      if (operation[BODY_OPTIONAL]) operation.requestBody.required = false;
      delete operation[BODY_OPTIONAL];
      addMissingExamples(operation.requestBody?.content, openapiObject);
      for (const response of Object.values(operation.responses ?? {}) as Json[]) {
        addMissingExamples(response.content, openapiObject);
      }
    }
    return openapiObject;
  };
}

/** `examples` of a media type, one per `[name, value]`, for responses with several documented bodies. */
export function namedExamples(entries: [name: string, value: unknown, summary?: string][]) {
  return Object.fromEntries(entries.map(([name, value, summary]) => [name, { ...(summary && { summary }), value }]));
}

/** What a route takes and answers, as a host's shared error responses are derived from it. */
export type DocumentedRoute = Pick<RouteOptions, 'url' | 'method' | 'schema' | 'config'>;

/** Methods whose requests Fastify reads a body of (by its Content-Type): such a route can be refused one. */
const BODYLESS_METHODS = new Set(['GET', 'HEAD', 'TRACE']);

/** Whether a request to `route` may carry a body, so be refused its size, media type or JSON. */
export const readsBody = (route: DocumentedRoute) =>
  [route.method].flat().some((method) => !BODYLESS_METHODS.has(method.toUpperCase()));

/**
 * Documents, on every route `scope` registers from now on, the error responses `sharedOf` derives
 * from it (a route with a body can be refused its size and media type, ...), a route's own entries
 * winning; and the Cache-Control and RateLimit headers of its answers, as its requests are
 * authenticated.
 */
export function documentSharedErrors(scope: FastifyInstance, sharedOf: (route: DocumentedRoute) => object): void {
  scope.addHook('onRoute', (route) => {
    const response = { ...sharedOf(route), ...(route.schema?.response as object) };
    route.schema = { ...route.schema, response: withCredentialAnswerHeaders(response) };
  });
}

/** Statuses answered before a request is counted against its credential: without RateLimit headers. */
const UNCOUNTED_STATUSES = new Set(['401', '421']);

/**
 * `responses` (a route's `response` schema) with the headers of each answer a counted request may
 * get: Cache-Control (unless the route documents its own) and RateLimit.
 */
export function withCredentialAnswerHeaders<R extends Record<string, object>>(responses: R): R {
  return Object.fromEntries(
    Object.entries(responses).map(([status, response]) => [
      status,
      UNCOUNTED_STATUSES.has(status)
        ? response
        : {
            ...response,
            headers: { ...NO_STORE_HEADER, ...(response as { headers?: object }).headers, ...RATE_LIMIT_HEADERS },
          },
    ]),
  ) as R;
}

/** An authenticated answer's Cache-Control, where its route does not set its own (src/http/authentication.ts). */
const NO_STORE_HEADER = {
  'Cache-Control': { type: 'string' as const, description: "`no-store`: the answer is your credential's only" },
};

/** RateLimit-Limit, -Remaining and -Reset: on every answer to a request counted against a credential's budget. */
const RATE_LIMIT_HEADERS = {
  'RateLimit-Limit': { type: 'integer' as const, description: 'Requests the budget allows per window' },
  'RateLimit-Remaining': { type: 'integer' as const, description: 'Requests left in this window' },
  'RateLimit-Reset': { type: 'integer' as const, description: 'Seconds until the window resets' },
};

/** The `Retry-After` of a response the client may retry (`headers` of a documented response). */
export const retryAfterHeader = {
  'Retry-After': { type: 'integer' as const, minimum: 1, description: 'Seconds to wait before retrying' },
};

/** The `Allow` of a 405: the methods the path serves. */
export const allowHeader = { Allow: { type: 'string' as const, description: 'The methods this path serves' } };
