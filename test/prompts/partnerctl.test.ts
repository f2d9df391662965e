// `partnerctl default-prompts` and `partnerctl trips`, as real processes against a test service.
import { beforeAll, describe, expect, it } from 'vitest';
import { useApps } from '../support/apps.js';
import { TEST_ADMIN_TOKEN } from '../support/env.js';
import { partnerctl } from '../support/process.js';

describe('partnerctl default-prompts and trips', () => {
  const service = useApps(['admin'], { listen: true });
  let env: Record<string, string>;
  beforeAll(async () => {
    env = { ADMIN_URL: service.urls.admin!, ADMIN_TOKEN: TEST_ADMIN_TOKEN };
  });

  it("replaces and shows a language's default set", async () => {
    const set = await partnerctl(
      ['default-prompts', 'set', 'ar', '--text', 'أين أقضي عطلتي؟', '--text', 'ما الطقس غدًا؟', '--json'],
      env,
    );
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout).prompts.map((p: { text: string }) => p.text)).toEqual([
      'أين أقضي عطلتي؟',
      'ما الطقس غدًا؟',
    ]);
    const shown = await partnerctl(['default-prompts', 'show', 'ar'], env);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain('ما الطقس غدًا؟');
    const refused = await partnerctl(['default-prompts', 'show', 'fr'], env);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('VALIDATION_ERROR');
  });

  it('creates and shows a trip, live by default or in test mode', async () => {
    const { tenant } = await service.createTenant();
    const created = await partnerctl(
      [
        'trips',
        'create',
        '--tenant',
        tenant.id,
        '--title',
        'Jeddah',
        '--start',
        '2030-05-01',
        '--adults',
        '2',
        '--json',
      ],
      env,
    );
    expect(created.code, created.stderr).toBe(0);
    const { trip } = JSON.parse(created.stdout);
    expect(trip).toMatchObject({
      title: 'Jeddah',
      start_date: '2030-05-01',
      travelers: { adults: 2, children: 0 },
      status: 'draft',
    });
    const shown = await partnerctl(['trips', 'show', trip.id, '--json'], env);
    expect(JSON.parse(shown.stdout)).toEqual({ trip });
    expect(trip.mode).toBe('live');

    const test = await partnerctl(
      ['trips', 'create', '--tenant', tenant.id, '--title', 'Sandbox', '--mode', 'test', '--json'],
      env,
    );
    expect(test.code, test.stderr).toBe(0);
    expect(JSON.parse(test.stdout).trip).toMatchObject({ title: 'Sandbox', mode: 'test' });
  });
});
