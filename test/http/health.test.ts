import { describe, expect, it } from 'vitest';
import { useApps } from '../support/apps.js';
import { packageVersion } from '../support/release.js';

describe('health probes', () => {
  const service = useApps(['integrations', 'backend', 'admin', 'portal'], { listen: true });

  it.each(['integrations', 'backend', 'admin', 'portal'] as const)(
    '%s answers /healthz and /readyz without auth',
    async (name) => {
      for (const path of ['/healthz', '/readyz']) {
        const response = await fetch(`${service.urls[name]}${path}`);
        expect(response.status).toBe(200);
        expect(await response.json()).toEqual(
          path === '/healthz' ? { status: 'ok', version: packageVersion } : { status: 'ok' },
        );
      }
    },
  );

  it('echoes a sane incoming X-Request-Id and makes one otherwise', async () => {
    const echoed = await fetch(`${service.urls.admin}/healthz`, { headers: { 'x-request-id': 'abc-123' } });
    expect(echoed.headers.get('x-request-id')).toBe('abc-123');
    const made = await fetch(`${service.urls.admin}/healthz`, { headers: { 'x-request-id': 'bad id\twith spaces' } });
    expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});
