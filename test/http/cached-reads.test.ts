// Repeated reads are answered from cached bytes (src/http/response-cache.ts) by a hook of the host's
// one pipeline, after its authenticator: byte for byte and header for header what the first answer
// was, under the same credential checks, rate limits, logs and metrics. Nothing here depends on
// how fast requests follow each other: a cached response lives until its data changes.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { Socket } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { type TestTenant, useApps, useTenant } from '../support/apps.js';
import { askedTwiceFromCache } from '../support/cache-hits.js';
import { loggerInto } from '../support/logs.js';

const lines: string[] = [];
const service = useApps(['backend', 'integrations', 'admin'], {
  listen: true,
  logger: loggerInto(lines, 'info'),
  env: { RATE_LIMIT_PER_MINUTE: '6', AUTH_FAILURE_LIMIT_PER_MINUTE: '2' },
});
const tenant = useTenant(service);
let citiesKey: string;

beforeAll(async () => {
  citiesKey = (await service.admin('POST', '/partner-keys', { name: 'reads', scopes: ['cities:read'] })).json().key;
  // The first page of a list in a language computes that language's order of all 125k cities, which
  // on a busy machine can outlast the credential cache's second: the tests' first requests would
  // then find their credential no longer cached, and go to Fastify for that reason alone.
  const warmUpKey = (await service.admin('POST', '/partner-keys', { name: 'warm-up', scopes: ['cities:read'] })).json()
    .key;
  for (const language of ['en', 'ar']) {
    const response = await fetch(`${service.urls.backend}/v1/cities/?limit=1`, {
      headers: { authorization: `Api-Key ${warmUpKey}`, 'accept-language': language },
    });
    expect(response.status).toBe(200);
  }
});

/** Look-ups of one of a service's caches so far. */
function lookUps(name: string, apps = service) {
  const counts = apps.context.caches.statistics().get(name);
  return (counts?.hits ?? 0) + (counts?.misses ?? 0);
}

/** Answers a service gave from cached bytes so far: the response cache's hits. */
const answeredFromCache = (apps = service) => apps.context.caches.statistics().get('responses')?.hits ?? 0;

/** The log line of a request, without what differs from one request to the next. */
function logLineOf(requestId: string) {
  const line = lines.map((text) => JSON.parse(text)).find((record) => record.request_id === requestId);
  const { time: _time, ms, request_id: _id, ...fields } = line;
  expect(typeof ms).toBe('number');
  return fields;
}

/** How many durations a route's series of 200s holds. */
async function durationCount(listener: string, route: string) {
  const histogram = (await service.context.metrics.registry.getMetricsAsJSON()).find(
    (candidate) => candidate.name === 'http_request_duration_seconds',
  );
  const count = (histogram?.values ?? []).find(
    (value) =>
      'metricName' in value &&
      value.metricName === 'http_request_duration_seconds_count' &&
      value.labels.listener === listener &&
      value.labels.route === route &&
      value.labels.status === 200,
  );
  return count?.value ?? 0;
}

async function get(url: string, headers: Record<string, string>) {
  const response = await fetch(url, { headers });
  return { status: response.status, headers: Object.fromEntries(response.headers), body: await response.text() };
}

/** The headers that differ from one answer to the next whoever makes it. */
const REQUEST_OWN = ['date', 'x-request-id', 'ratelimit-remaining', 'ratelimit-reset'];
const stable = (headers: Record<string, string>) =>
  Object.fromEntries(Object.entries(headers).filter(([name]) => !REQUEST_OWN.includes(name)));

describe('a repeated cached read', () => {
  it('is answered from the cache with the status, bytes, headers, log line and metric of the first answer', async () => {
    // A page no other test asks for: the first request is Fastify's.
    const url = `${service.urls.backend}/v1/cities/?limit=3&offset=7`;
    const headers = { authorization: `Api-Key ${citiesKey}`, 'accept-language': 'ar' };
    const answered = answeredFromCache();
    const counted = await durationCount('backend', '/v1/cities/');
    const first = await get(url, { ...headers, 'x-request-id': 'routed-read-1' });
    expect(first.status).toBe(200);
    expect(answeredFromCache()).toBe(answered);
    // The route's handler reads the geo data version first: the cached answer came before it.
    const versionLookUps = lookUps('geo_data_version');
    const again = await get(url, { ...headers, 'x-request-id': 'cached-read-1' });
    expect(answeredFromCache()).toBe(answered + 1);
    expect(lookUps('geo_data_version')).toBe(versionLookUps);
    expect(again.status).toBe(first.status);
    expect(again.body).toBe(first.body);
    expect(stable(again.headers)).toEqual(stable(first.headers));
    expect(again.headers['x-request-id']).toBe('cached-read-1');
    expect(Number(again.headers['ratelimit-remaining'])).toBe(Number(first.headers['ratelimit-remaining']) - 1);

    expect(logLineOf('cached-read-1')).toEqual(logLineOf('routed-read-1'));
    expect(logLineOf('cached-read-1')).toMatchObject({ msg: 'request completed', listener: 'backend', status: 200 });
    expect(await durationCount('backend', '/v1/cities/')).toBe(counted + 2);
  });

  it('is refused on the next request once its key is revoked, and a key without the scope gets 403', async () => {
    const { id, key } = (
      await service.admin('POST', '/partner-keys', { name: 'gone', scopes: ['cities:read'] })
    ).json();
    const url = `${service.urls.backend}/v1/cities/?limit=2&offset=11`;
    expect((await get(url, { authorization: `Api-Key ${key}` })).status).toBe(200);
    const answered = answeredFromCache();
    expect((await get(url, { authorization: `Api-Key ${key}` })).status).toBe(200);
    expect(answeredFromCache()).toBe(answered + 1);
    const countriesOnly = (
      await service.admin('POST', '/partner-keys', { name: 'other', scopes: ['countries:read'] })
    ).json().key;
    // Known to the credential cache, so that the request is refused for its scope alone.
    expect(
      (await get(`${service.urls.backend}/v1/countries/`, { authorization: `Api-Key ${countriesOnly}` })).status,
    ).toBe(200);
    const forbidden = await get(url, { authorization: `Api-Key ${countriesOnly}` });
    expect(forbidden.status).toBe(403);
    expect(JSON.parse(forbidden.body)).toEqual({ detail: 'This API key lacks the cities:read permission.' });
    expect((await service.admin('DELETE', `/partner-keys/${id}`)).statusCode).toBe(200);
    const refused = await get(url, { authorization: `Api-Key ${key}` });
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.body)).toEqual({ detail: 'Invalid API key.' });
    expect(answeredFromCache()).toBe(answered + 1);
  });

  it('is refused at once on the kept-alive connection that presented the key before it was revoked', async () => {
    const { id, key } = (
      await service.admin('POST', '/partner-keys', { name: 'kept', scopes: ['cities:read'] })
    ).json();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const connections = new Set<Socket>();
    const read = () =>
      new Promise<number | undefined>((resolve, reject) => {
        const request = http.get(
          `${service.urls.backend}/v1/cities/?limit=2&offset=13`,
          { agent, headers: { authorization: `Api-Key ${key}` } },
          (response) => {
            connections.add(response.socket);
            response.resume().on('end', () => resolve(response.statusCode));
          },
        );
        request.on('error', reject);
      });
    try {
      expect(await read()).toBe(200);
      const answered = answeredFromCache();
      expect(await read()).toBe(200);
      expect(await read()).toBe(200);
      expect(answeredFromCache()).toBe(answered + 2);
      expect((await service.admin('DELETE', `/partner-keys/${id}`)).statusCode).toBe(200);
      expect(await read()).toBe(401);
      expect(connections.size).toBe(1);
    } finally {
      agent.destroy();
    }
  });

  it('is counted against the rate limit, and the request over it is refused', async () => {
    const { key } = (await service.admin('POST', '/partner-keys', { name: 'limited', scopes: ['cities:read'] })).json();
    const url = `${service.urls.backend}/v1/cities/?limit=2&offset=13`;
    const answered = answeredFromCache();
    const responses = [];
    for (let request = 0; request < 7; request++) responses.push(await get(url, { authorization: `Api-Key ${key}` }));
    expect(responses.map((response) => response.status)).toEqual([200, 200, 200, 200, 200, 200, 429]);
    expect(responses.map((response) => response.headers['ratelimit-remaining'])).toEqual([
      '5',
      '4',
      '3',
      '2',
      '1',
      '0',
      '0',
    ]);
    expect(Number(responses[6].headers['retry-after'])).toBeGreaterThan(0);
    expect(answeredFromCache()).toBe(answered + 5);
  });

  it('is answered 304 with If-None-Match without the cached bytes, and as HEAD with its headers', async () => {
    const url = `${service.urls.backend}/v1/cities/?limit=2&offset=19`;
    const authorization = `Api-Key ${(await service.admin('POST', '/partner-keys', { name: 'etag', scopes: ['cities:read'] })).json().key}`;
    const first = await get(url, { authorization });
    const answered = answeredFromCache();
    expect((await get(url, { authorization, 'if-none-match': first.headers.etag })).status).toBe(304);
    expect(answeredFromCache()).toBe(answered);
    // HEAD goes to the route, which sends the headers of the same cached response.
    const head = await fetch(url, { method: 'HEAD', headers: { authorization } });
    expect(head.status).toBe(200);
    expect(head.headers.get('etag')).toBe(first.headers.etag);
    expect(answeredFromCache()).toBe(answered + 1);
  });

  it("gives a tenant its own effective prompts, never another tenant's", async () => {
    const other = await service.createTenant();
    const create = (who: TestTenant, text: string) =>
      fetch(`${service.urls.integrations}/api/v1/suggested-prompts/`, {
        method: 'POST',
        headers: { authorization: `Api-Key ${who.credentials.sso_hmac_secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ language: 'en', text }),
      });
    expect((await create(tenant, 'Ours')).status).toBe(201);
    expect((await create(other, 'Theirs')).status).toBe(201);
    const effective = (who: TestTenant) =>
      get(`${service.urls.integrations}/api/v1/suggested-prompts/effective/?language=en`, {
        authorization: `Api-Key ${who.credentials.sso_hmac_secret}`,
      });
    const texts = (response: { body: string }) =>
      JSON.parse(response.body).data.prompts.map((prompt: { text: string }) => prompt.text);
    const [first, again] = await askedTwiceFromCache(service, () => effective(tenant));
    expect(texts(first)).toEqual(['Ours']);
    expect(again.body).toBe(first.body);
    expect(stable(again.headers)).toEqual(stable(first.headers));
    const [theirs, theirsAgain] = await askedTwiceFromCache(service, () => effective(other));
    expect(texts(theirs)).toEqual(['Theirs']);
    expect(theirsAgain.body).toBe(theirs.body);
  });
});

describe('a repeated cached read with the counters in Redis', () => {
  const shared = useApps(['backend', 'admin'], {
    listen: true,
    env: {
      REDIS_URL: 'redis://127.0.0.1:6379',
      REDIS_KEY_PREFIX: `test-${randomBytes(6).toString('hex')}`,
      RATE_LIMIT_PER_MINUTE: '3',
    },
  });

  it('is answered once Redis has counted it, and the request over the limit is refused', async () => {
    const { key } = (await shared.admin('POST', '/partner-keys', { name: 'redis', scopes: ['cities:read'] })).json();
    const url = `${shared.urls.backend}/v1/cities/?limit=2&offset=23`;
    const answered = answeredFromCache(shared);
    const responses = [];
    for (let request = 0; request < 4; request++) responses.push(await get(url, { authorization: `Api-Key ${key}` }));
    expect(responses.map((response) => response.status)).toEqual([200, 200, 200, 429]);
    expect(responses.map((response) => response.headers['ratelimit-remaining'])).toEqual(['2', '1', '0', '0']);
    expect(answeredFromCache(shared)).toBe(answered + 2);
  });
});

describe('a repeated cached read from an address over its failure budget', () => {
  const limited = useApps(['backend', 'admin'], {
    listen: true,
    env: { AUTH_FAILURE_LIMIT_PER_MINUTE: '1' },
  });

  it('is still answered to a valid key: only failures are refused', async () => {
    const { key } = (await limited.admin('POST', '/partner-keys', { name: 'shared', scopes: ['cities:read'] })).json();
    const url = `${limited.urls.backend}/v1/cities/?limit=2&offset=29`;
    const read = (secret: string) => get(url, { authorization: `Api-Key ${secret}` });
    expect((await read(key)).status).toBe(200);
    const failures = [];
    for (let guess = 0; guess < 2; guess++) failures.push((await read('pis_bk_wrong')).status);
    expect(failures).toEqual([401, 429]);
    expect((await read(key)).status).toBe(200);
  });
});
