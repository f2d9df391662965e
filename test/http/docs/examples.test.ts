// The integrations reference's examples are what a partner really gets: its country, city and
// prompt examples are compared with the live answers for the same reference rows (only the ids,
// the flag's host and the timestamps are the example's own).
import { beforeAll, describe, expect, it } from 'vitest';
import type { Json } from '../../../src/http/openapi.js';
import { useApps, useTenant } from '../../support/apps.js';

const service = useApps(['integrations', 'admin'], { listen: true });
const tenant = useTenant(service);
let document: Json;

async function envelope(method: string, path: string, body?: unknown) {
  const response = await fetch(`${service.urls.integrations}${path}`, {
    method,
    headers: {
      authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}`,
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  expect(response.status, path).toBeLessThan(300);
  return (await response.json()).data;
}

/** The 2xx example the reference shows for an operation. */
function exampleOf(operationId: string): Json {
  for (const item of Object.values<Json>(document.paths))
    for (const operation of Object.values<Json>(item))
      if (operation.operationId === operationId) {
        const [, response] = Object.entries<Json>(operation.responses).find(([status]) => status.startsWith('2'))!;
        return response.content['application/json'].example.data;
      }
  throw new Error(`no operation ${operationId}`);
}

const withoutIds = ({ id: _id, country: _country, flag, ...rest }: Json) => ({
  ...rest,
  ...(flag ? { flag: new URL(flag).pathname } : {}),
});

beforeAll(async () => {
  document = await (await fetch(`${service.urls.integrations}/api/v1/openapi.json`)).json();
});

describe('the integrations reference’s examples', () => {
  it('show a real country and one of its real cities, as the live lists answer them', async () => {
    const [country] = exampleOf('listCountries').results;
    const [city] = exampleOf('listCities').results;
    expect(city.country).toBe(country.id);
    const live = (await envelope('GET', '/api/v1/countries/?limit=100&offset=0')).results
      .concat((await envelope('GET', '/api/v1/countries/?limit=100&offset=100')).results)
      .concat((await envelope('GET', '/api/v1/countries/?limit=100&offset=200')).results)
      .find((candidate: Json) => candidate.code === country.code);
    expect(live, country.code).toBeDefined();
    const { supported: _supported, ...shown }: Json = withoutIds(country);
    expect(withoutIds(live)).toMatchObject(shown);
    const cities: Json[] = [];
    for (let next: string | null = `/api/v1/cities/?country=${live.id}&limit=100`; next; ) {
      const page = await envelope('GET', next.replace(service.urls.integrations!, ''));
      cities.push(...page.results);
      next = page.next;
    }
    const liveCity = cities.find((candidate) => candidate.name === city.name);
    expect(liveCity, city.name).toBeDefined();
    expect(withoutIds(liveCity!)).toEqual(withoutIds(city));
  });

  it('show a prompt the API really answers for the example request', async () => {
    const shown = exampleOf('createSuggestedPrompt').prompt;
    expect(shown.name).toBe(shown.text);
    const { prompt } = await envelope('POST', '/api/v1/suggested-prompts/', {
      language: shown.language,
      text: shown.text,
      sort_order: shown.sort_order,
    });
    const timestampsAndId = { id: prompt.id, created_at: prompt.created_at, updated_at: prompt.updated_at };
    expect(prompt).toEqual({ ...shown, ...timestampsAndId });
    for (const operationId of ['listSuggestedPrompts', 'getEffectiveSuggestedPrompts'])
      expect({ ...exampleOf(operationId).prompts[0], ...timestampsAndId }).toEqual(prompt);
  });
});
