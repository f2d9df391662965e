// Every string field of every body and query parameter of the three hosts, read from their OpenAPI
// documents (so a new route is swept too), receives NUL, a lone surrogate and a 100 KB string in
// an otherwise valid request: each answer is a 4xx, never a 5xx, and no row is added anywhere.
import { randomBytes, randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ListenerName } from '../../src/config.js';
import { rowsOf } from '../../src/db/client.js';
import { createInvoice } from '../payments/support.js';
import { startTestApps, type TestApps, type TestTenant } from '../support/apps.js';
import { TEST_ADMIN_TOKEN } from '../support/env.js';

type Schema = Record<string, any>;
const BAD_VALUES: [string, string][] = [
  ['NUL', 'abc\u0000def'],
  ['lone surrogate', 'abc\ud800def'],
  ['100 KB', 'x'.repeat(100 * 1024)],
];
const DOCUMENTS: Record<ListenerName, string> = {
  integrations: '/api/v1/openapi.json',
  backend: '/v1/openapi.json',
  admin: '/admin/v1/openapi.json',
};

let service: TestApps;
let tenant: TestTenant;
let partnerKey: string;
/** Ids of real rows, for fields and path parameters that must name one. */
let ids: Record<string, string>;

beforeAll(async () => {
  service = await startTestApps(['integrations', 'backend', 'admin']);
  tenant = await service.createTenant();
  partnerKey = (await service.admin('POST', '/partner-keys', { name: 'sweep', scopes: ['countries:read'] })).json().key;
  const invoice = await createInvoice(service, tenant);
  const city = (await service.admin('GET', '/cities?name=Riyadh&country=SA')).json().cities[0];
  ids = { tenant_id: tenant.tenant.id, invoice_id: invoice.id, city: city.id, country: city.country_id };
});
afterAll(() => service?.stop());

async function rowCount(): Promise<number> {
  const tables = rowsOf<{ name: string }>(
    await service.context.db.execute(
      // credential_usage records that a credential was presented, whatever the request carried;
      // refused_notifications records every refused callback of an authenticated tenant, by design.
      sql`select format('%I.%I', schemaname, tablename) as name from pg_tables
            where schemaname in ('public', 'pgboss')
              and tablename not in ('credential_usage', 'refused_notifications')`,
    ),
  );
  let total = 0;
  for (const { name } of tables) {
    const [row] = rowsOf<{ count: number }>(
      await service.context.db.execute(sql.raw(`select count(*)::int as count from ${name}`)),
    );
    total += row.count;
  }
  return total;
}

function resolve(document: Schema, schema: Schema | undefined): Schema | undefined {
  if (!schema?.$ref) return schema;
  const name = String(schema.$ref).split('/').pop()!;
  return (
    document.components?.schemas?.[name] ??
    Object.values(document.components?.schemas ?? {}).find((candidate: any) => candidate.$id === name)
  );
}

/** Values of fields whose schema alone does not say what a valid one is. */
const FIELD_VALUES: Record<string, () => unknown> = {
  slug: () => `sweep-${randomBytes(4).toString('hex')}`,
  gateway: () => 'tap',
  currency: () => 'SAR',
  amount: () => '10.00',
  time: () => '09:00',
};
const FORMAT_VALUES: Record<string, () => string> = {
  uuid: () => randomUUID(),
  uri: () => 'https://example.com/sweep',
  date: () => '2027-01-10',
};

/** A valid-looking value for a schema: a known field's, else from its enum, format or type. */
function sample(document: Schema, raw: Schema | undefined, field: string): unknown {
  const schema = resolve(document, raw) ?? {};
  if (field in ids) return ids[field];
  if (FIELD_VALUES[field]) return FIELD_VALUES[field]();
  if (schema.anyOf)
    return sample(
      document,
      schema.anyOf.find((option: Schema) => option.type !== 'null'),
      field,
    );
  if (schema.enum) return schema.enum[0];
  if (schema.const !== undefined) return schema.const;
  return sampleOfType(document, schema, field);
}

function sampleOfType(document: Schema, schema: Schema, field: string): unknown {
  switch ([schema.type].flat().find((type) => type !== 'null')) {
    case 'object':
      return Object.fromEntries(
        (schema.required ?? []).map((name: string) => [name, sample(document, schema.properties?.[name], name)]),
      );
    case 'array':
      return schema.minItems ? [sample(document, schema.items, field)] : [];
    case 'integer':
    case 'number':
      return schema.minimum ?? 1;
    case 'boolean':
      return true;
    default:
      return FORMAT_VALUES[schema.format]?.() ?? `Sweep ${randomBytes(3).toString('hex')}`;
  }
}

/** Paths (dotted) of the string fields of a body schema, nested objects included. */
function stringFields(document: Schema, raw: Schema | undefined, prefix: string[] = []): string[][] {
  const schema = resolve(document, raw);
  if (!schema || schema.type !== 'object') return [];
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
      const bodySchema = operation.requestBody?.content?.['application/json']?.schema;
      const base = (bodySchema ? sample(document, bodySchema, '') : {}) as Record<string, unknown>;
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
    for (const [listener, documentPath] of Object.entries(DOCUMENTS) as [ListenerName, string][]) {
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
