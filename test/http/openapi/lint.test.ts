// The three OpenAPI documents pass Redocly's recommended rules with no error, and every operation
// carries what a partner's tooling needs: an operationId, a summary, tags, and examples of its
// request and of every response, each documented error with its exact body.
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Json, operationsOf } from '../../../src/http/openapi.js';
import { documentFromRoutes } from '../../../src/http/route.js';
import { packageVersion } from '../../support/release.js';
import { useService } from '../../support/service.js';
import { DOCUMENTED_HOSTS, operationsOfDocument, operationsOfScopes } from './route-lists.js';

const service = useService();
const documents: Record<string, Json> = {};

beforeAll(async () => {
  const fetchJson = async (url: string) => (await fetch(url)).json();
  documents.integrations = await fetchJson(`${service.urls.integrations}/api/v1/openapi.json`);
  documents.backend = await fetchJson(`${service.urls.backend}/v1/openapi.json`);
  documents.admin = (await service.admin('GET', '/openapi.json')).json();
});

/** Every media type of an operation's request and responses, with where it is. */
function mediaOf(operation: Json): [string, Json][] {
  const request = Object.entries(operation.requestBody?.content ?? {}).map(
    ([type, media]) => [`request ${type}`, media] as [string, Json],
  );
  const responses = Object.entries<Json>(operation.responses ?? {}).flatMap(([status, response]) =>
    Object.entries(response.content ?? {}).map(([type, media]) => [`${status} ${type}`, media] as [string, Json]),
  );
  return [...request, ...responses];
}

describe.each(['integrations', 'backend', 'admin'] as const)('the %s document', (name) => {
  it('is the one its route lists make on an instance that never answers, without a context', async () => {
    const host = DOCUMENTED_HOSTS[name](() => documents[name].servers[0].url);
    const built = (await documentFromRoutes(host)) as Json;
    expect(built).toEqual(documents[name]);
    expect(Object.keys(built.paths)).toEqual(Object.keys(documents[name].paths));
    expect(operationsOfDocument(built).sort()).toEqual(operationsOfScopes(host.scopes).sort());
  });

  it('is versioned as the release', () => {
    expect(documents[name].info.version).toBe(packageVersion);
  });

  it('has no error under Redocly recommended rules', async () => {
    const config = await createConfig({
      extends: ['recommended'],
      // The specification fixes these paths with their trailing slash (`/api/v1/countries/`), and
      // the answers' `next` links carry it: the documents keep the paths partners are given.
      rules: { 'no-path-trailing-slash': 'off' },
    });
    const problems = await lintFromString({
      source: JSON.stringify(documents[name]),
      absoluteRef: `${name}.json`,
      config,
    });
    const errors = problems
      .filter((problem) => problem.severity === 'error')
      .map((problem) => `${problem.ruleId} ${problem.location[0]?.pointer}: ${problem.message}`);
    expect(errors).toEqual([]);
  });

  it('gives every operation an operationId, a summary, tags and examples', () => {
    const operations = operationsOf(documents[name]);
    expect(operations.length).toBeGreaterThan(0);
    const lacking = operations.flatMap((operation) => {
      const missing = ['operationId', 'summary', 'tags'].filter((field) => !operation[field]);
      for (const [where, media] of mediaOf(operation)) {
        if (media.example === undefined && media.examples === undefined && !where.includes('svg')) {
          missing.push(`example of ${where}`);
        }
      }
      return missing.length > 0 ? [`${operation.operationId ?? operation.summary}: ${missing.join(', ')}`] : [];
    });
    expect(lacking).toEqual([]);
    const ids = operations.map((operation) => operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('names the server partners reach, and writes tuples as OpenAPI 3.1 prefixItems', () => {
    const expected = {
      integrations: service.urls.integrations,
      backend: service.urls.backend,
      admin: '/',
    }[name];
    expect(documents[name].servers[0].url).toBe(expected);
    expect(JSON.stringify(documents[name])).not.toContain('"additionalItems"');
  });
});

describe('documented errors', () => {
  it('carry the exact bodies the hosts answer', async () => {
    const trip = documents.integrations.paths['/api/v1/trips/{id}/'].get.responses['404'];
    const unknownTrip = await fetch(`${service.urls.integrations}/api/v1/trips/${crypto.randomUUID()}/`, {
      headers: { authorization: `Api-Key ${(await service.createTenant()).credentials.sso_hmac_secret}` },
    });
    expect(trip.content['application/json'].examples.NOT_FOUND.value).toEqual(await unknownTrip.json());

    const callback = documents.integrations.paths['/api/v1/payments/notify/'].post.responses['401'];
    const missingKey = await fetch(`${service.urls.integrations}/api/v1/payments/notify/`, { method: 'POST' });
    expect(callback.content['application/json'].examples['Missing API key'].value).toEqual(await missingKey.json());

    const invoice = documents.admin.paths['/admin/v1/invoices/{id}'].get.responses['404'];
    const unknownInvoice = await service.admin('GET', `/invoices/${crypto.randomUUID()}`);
    expect(invoice.content['application/json'].examples.NOT_FOUND.value).toEqual(unknownInvoice.json());

    const cities = documents.backend.paths['/v1/cities/'].get.responses['401'];
    const noKey = await fetch(`${service.urls.backend}/v1/cities/`);
    expect(cities.content['application/json'].examples.missing.value).toEqual(await noKey.json());
  });
});

describe('the integrations document', () => {
  it('describes what we send partners: the payment request and the ping, with their headers and the reply read', () => {
    const { webhooks } = documents.integrations;
    expect(Object.keys(webhooks)).toEqual(['payment.requested', 'ping']);
    const request = webhooks['payment.requested'].post;
    expect(request.parameters.map((parameter: Json) => parameter.name)).toEqual([
      'webhook-id',
      'webhook-timestamp',
      'webhook-signature',
    ]);
    expect(request.requestBody.content['application/json'].example.type).toBe('payment.requested');
    expect(request.responses['200'].content['application/json'].schema.properties).toHaveProperty('payment_url');
  });
});
