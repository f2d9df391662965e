import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/paths.js';
import { checkoutCommit } from '../../src/version.js';
import { useApps } from '../support/apps.js';
import { checkedOutCommit, packageVersion } from '../support/release.js';

describe('health probes', () => {
  const service = useApps(['integrations', 'backend', 'admin', 'portal'], { listen: true });

  it.each(['integrations', 'backend', 'admin', 'portal'] as const)(
    '%s answers /healthz and /readyz without auth',
    async (name) => {
      for (const path of ['/healthz', '/readyz']) {
        const response = await fetch(`${service.urls[name]}${path}`);
        expect(response.status).toBe(200);
        expect(await response.json()).toEqual(
          path === '/healthz' ? { status: 'ok', version: packageVersion, commit: checkedOutCommit } : { status: 'ok' },
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

describe('the commit /healthz names', () => {
  it("is the checkout's only at the top of a git checkout, else unknown", () => {
    expect(checkoutCommit(projectRoot)).toBe(checkedOutCommit);
    expect(checkedOutCommit).toMatch(/^[0-9a-f]{40}$/);
    // A folder inside the checkout is not a checkout of its own (a build copied into a repository).
    expect(checkoutCommit(path.join(projectRoot, 'src'))).toBe('unknown');
    const outside = mkdtempSync(path.join(tmpdir(), 'pi-no-checkout-'));
    try {
      expect(checkoutCommit(outside)).toBe('unknown');
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });
});
