// Route validators and serialisers are compiled on first use (src/http/host.ts): this compiles
// every one of every host, so that a schema that cannot compile fails here, not on a request.
import { describe, expect, it } from 'vitest';
import { compileAllSchemas } from '../../src/http/host/schema-compiling.js';
import { useApps } from '../support/apps.js';

const service = useApps(['integrations', 'backend', 'admin', 'portal']);

describe('every validator and serialiser', () => {
  it.each(['integrations', 'backend', 'admin', 'portal'] as const)('of the %s host compiles', (host) => {
    expect(compileAllSchemas(service.apps[host]!)).toBeGreaterThan(5);
    expect(compileAllSchemas(service.apps[host]!)).toBe(0);
  });
});
