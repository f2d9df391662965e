// Test and live never touch (DECISIONS §11), on every route of the integrations host: its OpenAPI
// document, read from the app (so a route added later is walked too), gives every place a request
// names an object (a path parameter, a uuid field of the body); each gets each object of the other
// mode (suggested prompt, trip, invoice, that is a payment request) with the credentials of one
// mode, and the answer must be a 404 (envelope NOT_FOUND; callback `Invoice not found`), nothing
// changed. Routes that name no object and answer a list must not list the other mode's objects.
import { sql } from 'drizzle-orm';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Mode } from '../../src/tenants/index.js';
import { useApps, useTenant } from '../support/apps.js';
import { bodySchemaOf, resolve, type Schema, sample } from './openapi-requests.js';

const DOCUMENT = '/api/v1/openapi.json';
const MODES: Mode[] = ['live', 'test'];
/** What every invoice of the sweep is for, and every callback says: a callback that found one would pay it. */
const AMOUNT = '10.00';

const service = useApps(['integrations', 'admin']);
const tenant = useTenant(service, { gateway: 'tap' });

interface Credentials {
  sso: string;
  partnerKey: string;
}
type ObjectKind = 'prompt' | 'trip' | 'invoice';
const credentials = {} as Record<Mode, Credentials>;
const objects = {} as Record<Mode, Record<ObjectKind, string>>;

function expectCreated(response: LightMyRequestResponse): Schema {
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

beforeAll(async () => {
  const issue = async (kind: string) =>
    expectCreated(await service.admin('POST', `/tenants/${tenant.tenant.id}/credentials`, { kind })).secret as string;
  credentials.live = { sso: tenant.credentials.sso_hmac_secret, partnerKey: tenant.credentials.partner_api_key };
  credentials.test = { sso: await issue('test_sso_hmac_secret'), partnerKey: await issue('test_partner_api_key') };
  for (const mode of MODES) {
    const api = (method: InjectOptions['method'], url: string, payload: object) =>
      service.apps.integrations!.inject({
        method,
        url,
        payload,
        headers: { authorization: `Api-Key ${credentials[mode].sso}` },
      });
    const prompt = expectCreated(await api('POST', '/api/v1/suggested-prompts/', { language: 'en', text: mode }));
    const trip = expectCreated(
      await service.admin('POST', '/trips', { tenant_id: tenant.tenant.id, title: `A ${mode} trip`, mode }),
    );
    const invoiceId =
      mode === 'live'
        ? expectCreated(
            await service.admin('POST', '/invoices', { tenant_id: tenant.tenant.id, amount: AMOUNT, currency: 'SAR' }),
          ).invoice.id
        : expectCreated(await api('POST', '/api/v1/test/invoices/', { amount: AMOUNT, currency: 'SAR' })).data
            .payment_request.invoice_id;
    objects[mode] = { prompt: prompt.data.prompt.id, trip: trip.trip.id, invoice: invoiceId };
  }
});

/** Where an operation names an object: its path parameters and the uuid fields of its body. */
interface Slot {
  where: string;
  request(id: string): InjectOptions;
}

/** The operation's required query parameters, sampled. */
const requiredQuery = (document: Schema, operation: Schema): Record<string, string> =>
  Object.fromEntries(
    (operation.parameters ?? [])
      .filter((parameter: Schema) => parameter.in === 'query' && parameter.required)
      .map((parameter: Schema) => [parameter.name, String(sample(document, parameter.schema, parameter.name, {}))]),
  );

function slotsOf(document: Schema, path: string, method: string, operation: Schema, mode: Mode): Slot[] {
  const parameters: Schema[] = operation.parameters ?? [];
  const query = requiredQuery(document, operation);
  const bodySchema = resolve(document, bodySchemaOf(operation));
  // Every field the body may have, so that a change changes something; the callback's outcome is
  // one the invoice would take: paid, for its amount.
  const known = { status: 'paid', amount: AMOUNT };
  const body =
    bodySchema &&
    Object.fromEntries(
      Object.entries<Schema>(bodySchema.properties ?? {}).map(([name, property]) => [
        name,
        sample(document, property, name, known),
      ]),
    );
  const headers: Record<string, string> = operation.security?.some((scheme: Schema) => 'PartnerApiKey' in scheme)
    ? { 'x-api-key': credentials[mode].partnerKey }
    : { authorization: `Api-Key ${credentials[mode].sso}` };
  const request = (url: string, payload?: Schema): InjectOptions => ({
    method: method.toUpperCase() as InjectOptions['method'],
    url,
    query,
    headers,
    ...(payload && { payload }),
  });
  const pathNames = parameters.filter((parameter) => parameter.in === 'path').map((parameter) => parameter.name);
  const bodyFields = Object.entries<Schema>(bodySchema?.properties ?? {})
    .filter(([, property]) => {
      const resolved = resolve(document, property) ?? {};
      return [resolved, ...(resolved.anyOf ?? [])].some((option) => option.format === 'uuid');
    })
    .map(([name]) => name);
  return [
    ...pathNames.map((name: string) => ({
      where: `path ${name}`,
      request: (id: string) => request(path.replace(`{${name}}`, id), body),
    })),
    ...bodyFields.map((name) => ({
      where: `body ${name}`,
      request: (id: string) => request(path.replace(/\{(\w+)\}/g, objects[mode].invoice), { ...body, [name]: id }),
    })),
  ];
}

/** Whether an answer is "no such object": the envelope's NOT_FOUND, or the callback's own body. */
function isNotFound(response: LightMyRequestResponse): boolean {
  const body = response.json();
  if (response.statusCode !== 404) return false;
  return body.error === 'Invoice not found' || (body.success === false && body.error?.code === 'NOT_FOUND');
}

/** A live secret may not use a test-only route at all: refused before any object is read. */
const refusedForMode = (response: LightMyRequestResponse) =>
  response.statusCode === 403 && response.json().error?.code === 'TEST_MODE_ONLY';

async function rowsOfObjects(): Promise<unknown> {
  const { db } = service.context;
  const read = async (query: ReturnType<typeof sql>) => await db.execute(query);
  return {
    prompts: await read(sql`select * from suggested_prompts order by id`),
    trips: await read(sql`select * from trips order by id`),
    invoices: await read(sql`select * from invoices order by id`),
    events: await read(sql`select count(*)::int as count from payment_events`),
    requests: await read(sql`select * from payment_requests order by invoice_id`),
  };
}

/** What the walk saw, for its report. */
interface Tally {
  routes: Set<string>;
  namingObjects: Set<string>;
  refused: Set<string>;
  listings: Set<string>;
  requests: number;
  ownObjectsListed: number;
}

const otherMode = (mode: Mode): Mode => (mode === 'live' ? 'test' : 'live');

/** Every object of the other mode in one slot: a 404 each; and, for a read, its own mode's found. */
async function walkSlot(tally: Tally, route: string, slot: Slot, mode: Mode, isRead: boolean) {
  const app = service.apps.integrations!;
  const other = otherMode(mode);
  tally.namingObjects.add(route);
  for (const [kind, id] of Object.entries(objects[other])) {
    const response = await app.inject(slot.request(id));
    tally.requests++;
    if (mode === 'live' && refusedForMode(response)) {
      tally.refused.add(route);
      continue;
    }
    const shown = `${mode} credential, ${route} ${slot.where} = ${other} ${kind}: ${response.statusCode} ${response.body.slice(0, 200)}`;
    expect(isNotFound(response), shown).toBe(true);
  }
  // The same request naming an object of the credential's own mode finds it, where a read can show
  // that: the 404s above are the mode's, not a malformed request's.
  if (!isRead) return;
  const found = [];
  for (const id of Object.values(objects[mode])) found.push((await app.inject(slot.request(id))).statusCode);
  expect(found, `${mode} credential, ${route}: its own mode's objects`).toContain(200);
}

/** A read naming no object: it lists none of the other mode's objects. */
async function walkListing(tally: Tally, route: string, request: InjectOptions, mode: Mode) {
  tally.listings.add(route);
  const response = await service.apps.integrations!.inject(request);
  tally.requests++;
  expect(response.statusCode, `${mode} credential, ${route}: ${response.body.slice(0, 200)}`).toBe(200);
  for (const id of Object.values(objects[otherMode(mode)])) {
    expect(response.body, `${mode} credential, ${route} lists ${id}`).not.toContain(id);
  }
  tally.ownObjectsListed += Object.values(objects[mode]).filter((id) => response.body.includes(id)).length;
}

/**
 * Every operation of the document with the credentials of `mode`: its listings first (the refused
 * callbacks the walk makes are the partner's own, and quote the ids they named), then its slots.
 */
async function walk(document: Schema, mode: Mode, tally: Tally, part: 'listings' | 'slots') {
  for (const [path, operations] of Object.entries<Record<string, Schema>>(document.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const route = `${method.toUpperCase()} ${path}`;
      tally.routes.add(route);
      const slots = slotsOf(document, path, method, operation, mode);
      if (part === 'slots') {
        for (const slot of slots) await walkSlot(tally, route, slot, mode, method === 'get');
      } else if (slots.length === 0 && method === 'get') {
        const query = requiredQuery(document, operation);
        const headers = { authorization: `Api-Key ${credentials[mode].sso}` };
        await walkListing(tally, route, { method: 'GET', url: path, query, headers }, mode);
      }
    }
  }
}

describe('every route of the integrations document, across modes', () => {
  it("answers the other mode's objects with a 404 and lists none of them", async () => {
    const document = (await service.apps.integrations!.inject({ method: 'GET', url: DOCUMENT })).json();
    const before = await rowsOfObjects();
    const tally: Tally = {
      routes: new Set(),
      namingObjects: new Set(),
      refused: new Set(),
      listings: new Set(),
      requests: 0,
      ownObjectsListed: 0,
    };
    for (const part of ['listings', 'slots'] as const) {
      for (const mode of MODES) await walk(document, mode, tally, part);
    }
    const refused = tally.refused.size
      ? `, except ${[...tally.refused].join(', ')} refused to live secrets (403 TEST_MODE_ONLY)`
      : '';
    console.log(
      `mode sweep: ${tally.routes.size} routes walked, ${tally.namingObjects.size} naming an object ` +
        `(${[...tally.namingObjects].join(', ')}); ${MODES.length * 3} objects tried (a prompt, a trip, an invoice ` +
        `per mode); ${tally.requests} requests, every one naming the other mode's object a 404${refused}; ` +
        `${tally.listings.size} listings list none of the other mode's objects (${tally.ownObjectsListed} of their own)`,
    );
    expect(tally.namingObjects.size).toBeGreaterThanOrEqual(6);
    // The listings do show objects: their silence about the other mode's means something.
    expect(tally.ownObjectsListed).toBeGreaterThanOrEqual(4);
    expect(await rowsOfObjects()).toEqual(before);
  });
});
