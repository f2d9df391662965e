// The effective set is cached in each process until prompts change: a change made anywhere (this
// process, another one, or by hand in SQL) must reach every process's cache.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { type RunningService, startService } from '../../src/server.js';
import { apiAs, expectOk } from '../http/integrations/api.js';
import { TEST_DATABASE_URL } from '../support/database.js';
import { testEnv } from '../support/env.js';
import { waitFor } from '../support/partner-endpoint.js';
import { type TestTenant, useService } from '../support/service.js';

const EFFECTIVE = '/api/v1/suggested-prompts/effective/?language=en';

/** The value `read` gives once `accept` holds: polled within waitFor's bound, well short of the cache's minute. */
const eventually = <T>(read: () => Promise<T>, accept: (value: T) => boolean): Promise<T> =>
  waitFor('the change to show', async () => {
    const value = await read();
    return accept(value) ? { value } : undefined;
  }).then(({ value }) => value);

describe('effective prompts cache', () => {
  const service = useService();
  let tenant: TestTenant;
  beforeAll(async () => {
    tenant = await service.createTenant();
  });

  const effectiveSource = async () =>
    expectOk<'getEffectiveSuggestedPrompts'>(await apiAs(service, tenant.credentials.sso_hmac_secret)('GET', EFFECTIVE))
      .source;

  it("sees a change made behind the service's back, in SQL, through the invalidation trigger", async () => {
    expect(await effectiveSource()).toBe('default');
    await service.context.database.executeSql(
      `insert into suggested_prompts (tenant_id, language, text) values ($1, 'en', 'Written by hand')`,
      [tenant.tenant.id],
    );
    expect(await eventually(effectiveSource, (source) => source === 'tenant')).toBe('tenant');
    await service.context.database.executeSql(`delete from suggested_prompts where tenant_id = $1`, [tenant.tenant.id]);
    expect(await eventually(effectiveSource, (source) => source === 'default')).toBe('default');
  });
});

describe.skipIf(!TEST_DATABASE_URL)('two instances on one database', () => {
  const first = useService();
  let second: RunningService;
  let tenant: TestTenant;
  beforeAll(async () => {
    second = await startService(loadConfig(testEnv(first.database.target)), createLogger('silent'));
    tenant = await first.createTenant();
  });
  afterAll(() => second.close());

  it('each sees the prompts the other writes', async () => {
    const viaFirst = apiAs(first, tenant.credentials.sso_hmac_secret);
    const effectiveOnSecond = async () =>
      (
        await second.apps.integrations!.inject({
          method: 'GET',
          url: EFFECTIVE,
          headers: { authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}` },
        })
      ).json().data;

    expect((await effectiveOnSecond()).source).toBe('default');
    const created = expectOk<'createSuggestedPrompt'>(
      await viaFirst('POST', '/api/v1/suggested-prompts/', { language: 'en', text: 'Plan my Umrah' }),
      201,
    );
    const seen = await eventually(effectiveOnSecond, (data) => data.source === 'tenant');
    expect(seen.prompts.map((prompt: { text: string }) => prompt.text)).toEqual(['Plan my Umrah']);

    expectOk(await viaFirst('PATCH', `/api/v1/suggested-prompts/${created.prompt.id}/`, { is_active: false }));
    expect((await eventually(effectiveOnSecond, (data) => data.source === 'default')).source).toBe('default');
  });

  it('a revocation made through one stops the secret on the other', async () => {
    const other = await first.createTenant();
    const secret = other.credentials.sso_hmac_secret;
    const statusOnSecond = async () =>
      (
        await second.apps.integrations!.inject({
          method: 'GET',
          url: EFFECTIVE,
          headers: { authorization: `Api-Key ${secret}` },
        })
      ).statusCode;
    expect(await statusOnSecond()).toBe(200);
    await first.admin('PATCH', `/tenants/${other.tenant.id}`, { is_active: false });
    expect(await eventually(statusOnSecond, (status) => status === 401)).toBe(401);
  });
});
