// Every string field of every body and query parameter of the three hosts, read from their OpenAPI
// documents (so a new route is swept too), receives NUL, a lone surrogate and a 100 KB string in
// an otherwise valid request: each answer is a 4xx, never a 5xx, and no row is added anywhere.
// Then every route receives the hostile requests of issue 25 (deep JSON, bytes that are not UTF-8,
// a bad percent-escape, headers too large, integers not in decimal): each a 4xx in its host's own
// error body, and again nothing stored.
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { sql } from 'drizzle-orm';
import type { InjectOptions } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ListenerName } from '../../src/config.js';
import { createInvoice } from '../payments/support.js';
import { useApps, useTenant } from '../support/apps.js';
import { TEST_ADMIN_TOKEN } from '../support/env.js';
import { bodySchemaOf, resolve, type Schema, sample } from './openapi-requests.js';

const BAD_VALUES: [string, string][] = [
  ['NUL', 'abc\u0000def'],
  ['lone surrogate', 'abc\ud800def'],
  ['100 KB', 'x'.repeat(100 * 1024)],
];
/** The hosts with an API document: the portal serves pages, not an API (its forms: test/http/portal/). */
type DocumentedListener = Exclude<ListenerName, 'portal'>;
const DOCUMENTS: Record<DocumentedListener, string> = {
  integrations: '/api/v1/openapi.json',
  backend: '/v1/openapi.json',
  admin: '/admin/v1/openapi.json',
};

const service = useApps(['integrations', 'backend', 'admin'], { listen: true });
const tenant = useTenant(service);
let partnerKey: string;
/** Ids of real rows, for fields and path parameters that must name one. */
let ids: Record<string, string>;

beforeAll(async () => {
  partnerKey = (
    await service.admin('POST', '/partner-keys', { name: 'sweep', scopes: ['countries:read', 'cities:read'] })
  ).json().key;
  const invoice = await createInvoice(service, tenant);
  const city = (await service.admin('GET', '/cities?name=Riyadh&country=SA')).json().cities[0];
  ids = { tenant_id: tenant.tenant.id, invoice_id: invoice.id, city: city.id, country: city.country_id };
});

async function rowCount(): Promise<number> {
  const tables = await service.context.db.execute<{ name: string }>(
    // credential_usage records that a credential was presented, whatever the request carried;
    // refused_notifications records every refused callback of an authenticated tenant, by design.
    sql`select format('%I.%I', schemaname, tablename) as name from pg_tables
            where schemaname = 'public'
              and tablename not in ('credential_usage', 'refused_notifications')`,
  );
  let total = 0;
  for (const { name } of tables) {
    const [row] = await service.context.db.execute<{ count: number }>(
      sql.raw(`select count(*)::int as count from ${name}`),
    );
    total += row.count;
  }
  return total;
}

/** Paths (dotted) of the string fields of a body schema, nested objects included. */
function stringFields(document: Schema, raw: Schema | undefined, prefix: string[] = []): string[][] {
  const schema = resolve(document, raw);
  if (schema?.type !== 'object') return [];
  return Object.entries(schema.properties ?? {}).flatMap(([name, property]) => {
    const resolved = resolve(document, property as Schema) ?? {};
    // A nullable field is `type: ["string", "null"]` (src/http/schemas.ts) or an anyOf.
    const types = [resolved.type, ...(resolved.anyOf ?? []).map((option: Schema) => option.type)].flat();
    if (types.includes('string')) return [[...prefix, name]];
    if (resolved.type === 'object') return stringFields(document, resolved, [...prefix, name]);
    return [];
  });
}

function withValue(body: Record<string, unknown>, path: string[], value: string): Record<string, unknown> {
  const copy = structuredClone(body);
  let target: Record<string, unknown> = copy;
  for (const part of path.slice(0, -1)) {
    target[part] ??= {};
    target = target[part] as Record<string, unknown>;
  }
  target[path.at(-1)!] = value;
  return copy;
}

function headersFor(listener: ListenerName, path: string): Record<string, string> {
  if (listener === 'admin') return { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };
  if (listener === 'backend') return { authorization: `Api-Key ${partnerKey}` };
  if (path.includes('/payments/notify')) return { 'x-api-key': tenant.credentials.partner_api_key };
  return { authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}` };
}

interface SweepCase {
  label: string;
  request: InjectOptions;
}

/** One request per string input of every operation of a host's document, and per bad value. */
function sweepCases(listener: ListenerName, document: Schema): SweepCase[] {
  const cases: SweepCase[] = [];
  for (const [path, operations] of Object.entries<Record<string, Schema>>(document.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const url = path.replace(/\{(\w+)\}/g, (_match, name) => (name === 'language' ? 'en' : randomUUID()));
      const bodySchema = bodySchemaOf(operation);
      const base = (bodySchema ? sample(document, bodySchema, '', ids) : {}) as Record<string, unknown>;
      const inputs = [
        ...stringFields(document, bodySchema).map((field) => ({
          where: `body ${field.join('.')}`,
          with: (value: string): InjectOptions => ({ payload: withValue(base, field, value) }),
          urlSafe: false,
        })),
        ...(operation.parameters ?? [])
          .filter((parameter: Schema) => parameter.in === 'query')
          .map((parameter: Schema) => ({
            where: `query ${parameter.name}`,
            with: (value: string): InjectOptions => ({ query: { [parameter.name]: value } }),
            urlSafe: true,
          })),
      ];
      for (const input of inputs) {
        for (const [name, value] of BAD_VALUES) {
          // A URL cannot carry a lone surrogate: it has no UTF-8 encoding, and bytes that are not
          // UTF-8 decode to U+FFFD, which is text.
          if (name === 'lone surrogate' && input.urlSafe) continue;
          cases.push({
            label: `${listener} ${method.toUpperCase()} ${path} ${input.where} (${name})`,
            request: {
              method: method.toUpperCase() as InjectOptions['method'],
              url,
              headers: headersFor(listener, path),
              ...input.with(value),
            },
          });
        }
      }
    }
  }
  return cases;
}

describe('every string input of every host', () => {
  it('answers NUL, a lone surrogate and a 100 KB string with a 4xx and stores nothing', async () => {
    const before = await rowCount();
    let sent = 0;
    for (const [listener, documentPath] of Object.entries(DOCUMENTS) as [DocumentedListener, string][]) {
      const app = service.apps[listener]!;
      const document = (await app.inject({ method: 'GET', url: documentPath })).json();
      for (const { label, request } of sweepCases(listener, document)) {
        const response = await app.inject(request);
        sent++;
        const answer = `${label}: ${response.statusCode} ${response.body.slice(0, 200)}`;
        expect(response.statusCode, answer).toBeGreaterThanOrEqual(400);
        expect(response.statusCode, answer).toBeLessThan(500);
      }
    }
    console.log(`sweep: ${sent} requests, every answer a 4xx`);
    expect(sent).toBeGreaterThan(150);
    expect(await rowCount()).toBe(before);
  });
});

/** Whether `body` is the documented error body of the host part `path` belongs to. */
function isHostErrorBody(listener: ListenerName, path: string, body: Schema): boolean {
  if (listener === 'admin') return typeof body?.error?.code === 'string' && typeof body.error.message === 'string';
  if (listener === 'backend') return body?.detail !== undefined && Object.keys(body).length === 1;
  if (path.includes('/payments/notify')) return typeof body?.error === 'string' && Object.keys(body).length === 1;
  return body?.success === false && body.data === null && typeof body.error?.code === 'string';
}

/** One raw HTTP/1.1 exchange with a listening host: status and parsed body. */
function rawExchange(base: string, request: string): Promise<{ status: number; body: unknown }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(request));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('end', () => {
      const answer = Buffer.concat(chunks).toString('utf8');
      resolve({ status: Number(answer.slice(9, 12)), body: JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) });
    });
    socket.on('error', reject);
  });
}

const DEEP_JSON = `{"sweep": ${'['.repeat(5000)}${']'.repeat(5000)}}`;
const NOT_UTF8 = Buffer.concat([Buffer.from('{"sweep": "a'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
const NOT_DECIMAL = ['0x10', '1e3', '1.0', ' 10'];

interface HostileCase {
  label: string;
  path: string;
  answer(): Promise<{ status: number; body: unknown }>;
}

/** The hostile requests of one operation: bodies (when it takes one), URL, headers, integers. */
function hostileCases(listener: ListenerName, document: Schema, path: string, method: string, operation: Schema) {
  const app = service.apps[listener]!;
  const url = path.replace(/\{(\w+)\}/g, (_match, name) => (name === 'language' ? 'en' : randomUUID()));
  const headers = headersFor(listener, path);
  const label = `${listener} ${method.toUpperCase()} ${path}`;
  const injected =
    (request: InjectOptions): HostileCase['answer'] =>
    async () => {
      const response = await app.inject({ method: method.toUpperCase() as InjectOptions['method'], ...request });
      return { status: response.statusCode, body: response.body ? response.json() : null };
    };
  const cases: HostileCase[] = [
    { label: `${label} %ZZ`, path, answer: injected({ url: `${url.replace(/\/?$/, '')}%ZZ/`, headers }) },
    {
      label: `${label} headers too large`,
      path,
      answer: () =>
        rawExchange(
          service.urls[listener]!,
          `${method.toUpperCase()} ${url} HTTP/1.1\r\nHost: localhost\r\nX-Sweep: ${'a'.repeat(20_000)}\r\n` +
            'Connection: close\r\n\r\n',
        ),
    },
  ];
  if (operation.requestBody?.content?.['application/json']) {
    for (const [name, payload] of [
      ['deep JSON', DEEP_JSON],
      ['not UTF-8', NOT_UTF8],
    ] as const) {
      const request = { url, headers: { ...headers, 'content-type': 'application/json' }, payload };
      cases.push({ label: `${label} ${name}`, path, answer: injected(request) });
    }
  }
  const integers = (operation.parameters ?? []).filter(
    (parameter: Schema) =>
      ['query', 'path'].includes(parameter.in) && resolve(document, parameter.schema)?.type === 'integer',
  );
  for (const parameter of integers) {
    for (const text of NOT_DECIMAL) {
      const target =
        parameter.in === 'query'
          ? `${url}?${parameter.name}=${encodeURIComponent(text)}`
          : path.replace(`{${parameter.name}}`, encodeURIComponent(text));
      cases.push({ label: `${label} ${parameter.name}=${text}`, path, answer: injected({ url: target, headers }) });
    }
  }
  return cases;
}

describe('every route of every host, hostile requests', () => {
  it('answers each with a 4xx in the host error body, and stores nothing', async () => {
    const before = await rowCount();
    let sent = 0;
    for (const [listener, documentPath] of Object.entries(DOCUMENTS) as [DocumentedListener, string][]) {
      const document = (await service.apps[listener]!.inject({ method: 'GET', url: documentPath })).json();
      for (const [path, operations] of Object.entries<Record<string, Schema>>(document.paths)) {
        for (const [method, operation] of Object.entries(operations)) {
          for (const { label, answer } of hostileCases(listener, document, path, method, operation)) {
            const { status, body } = await answer();
            sent++;
            const shown = `${label}: ${status} ${JSON.stringify(body).slice(0, 200)}`;
            expect(status, shown).toBeGreaterThanOrEqual(400);
            expect(status, shown).toBeLessThan(500);
            expect(isHostErrorBody(listener, path, body as Schema), shown).toBe(true);
          }
        }
      }
    }
    console.log(`hostile sweep: ${sent} requests, every answer a 4xx in its host's body`);
    expect(sent).toBeGreaterThan(100);
    expect(await rowCount()).toBe(before);
  });
});

/** Past the end of any list, yet a 64-bit integer: a page, empty. */
const FAR_OFFSETS = ['1000000000', '9223372036854775807'];
/** Too large for a 64-bit integer: refused as any invalid parameter is. */
const TOO_LARGE = ['9223372036854775808', '99999999999999999999999'];
const VALIDATION_STATUS: Record<DocumentedListener, number> = { integrations: 400, backend: 422, admin: 400 };

/** The items of a paged answer, in whichever host's body. */
function pageItems(body: Schema): unknown {
  return body?.data?.results ?? body?.results;
}

/** The paged routes of a host's document: GET operations taking both `limit` and `offset`. */
function pagedPaths(document: Schema): string[] {
  return Object.entries<Record<string, Schema>>(document.paths)
    .filter(([, operations]) => {
      const names = (operations.get?.parameters ?? []).map((parameter: Schema) => parameter.name);
      return names.includes('offset') && names.includes('limit');
    })
    .map(([path]) => path);
}

/** A paged route's answers to offsets past the end and to integers past 64 bits. */
async function checkPaging(listener: DocumentedListener, path: string): Promise<void> {
  const app = service.apps[listener]!;
  const headers = headersFor(listener, path);
  for (const offset of FAR_OFFSETS) {
    const response = await app.inject({ method: 'GET', url: `${path}?offset=${offset}`, headers });
    const shown = `${listener} ${path} offset=${offset}: ${response.statusCode} ${response.body.slice(0, 200)}`;
    expect(response.statusCode, shown).toBe(200);
    expect(pageItems(response.json()), shown).toEqual([]);
  }
  for (const name of ['offset', 'limit']) {
    for (const value of TOO_LARGE) {
      const response = await app.inject({ method: 'GET', url: `${path}?${name}=${value}`, headers });
      const body = response.json();
      const shown = `${listener} ${path} ${name}=${value}: ${response.statusCode} ${response.body.slice(0, 200)}`;
      expect(response.statusCode, shown).toBe(VALIDATION_STATUS[listener]);
      expect(isHostErrorBody(listener, path, body), shown).toBe(true);
      if (listener === 'backend') expect(body.detail[0].loc, shown).toEqual(['query', name]);
      else expect(body.error.code, shown).toBe('VALIDATION_ERROR');
    }
  }
}

describe('every paged route of every host', () => {
  it('answers an offset past the end with an empty page, an integer past 64 bits with a validation error', async () => {
    let routes = 0;
    for (const [listener, documentPath] of Object.entries(DOCUMENTS) as [DocumentedListener, string][]) {
      const document = (await service.apps[listener]!.inject({ method: 'GET', url: documentPath })).json();
      for (const path of pagedPaths(document)) {
        if (path.includes('{')) throw new Error(`${path}: a paged route with path parameters needs ids here`);
        await checkPaging(listener, path);
        routes++;
      }
    }
    console.log(`paging sweep: ${routes} paged routes`);
    expect(routes).toBeGreaterThanOrEqual(7);
  });
});
