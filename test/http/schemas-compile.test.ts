// Route validators and serialisers are compiled on first use (src/http/host.ts): this compiles
// every one of every host, so that a schema that cannot compile fails here, not on a request.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileAllSchemas } from '../../src/http/host.js';
import { startTestApps, type TestApps } from '../support/apps.js';

let service: TestApps;
beforeAll(async () => {
  service = await startTestApps(['integrations', 'backend', 'admin']);
});
afterAll(() => service.stop());

describe('every validator and serialiser', () => {
  it.each(['integrations', 'backend', 'admin'] as const)('of the %s host compiles', (host) => {
    expect(compileAllSchemas(service.apps[host]!)).toBeGreaterThan(10);
    expect(compileAllSchemas(service.apps[host]!)).toBe(0);
  });
});
