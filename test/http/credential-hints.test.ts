// A refused credential says what to fix: `WWW-Authenticate` on every 401 of the partner-facing
// hosts, and a hint (in the envelope on /api/v1/, in the challenge elsewhere, whose bodies are
// fixed) that reads the headers' shape and the key's prefix only. A valid key of the right kind
// that was revoked gets the same hint as one never issued.
import { beforeAll, describe, expect, it } from 'vitest';
import { useApps, useTenant } from '../support/apps.js';

const service = useApps(['integrations', 'backend', 'admin'], { listen: true });
const tenant = useTenant(service);
let revokedSso: string;
let backendKey: string;

beforeAll(async () => {
  const issued = (
    await service.admin('POST', `/tenants/${tenant.tenant.id}/credentials`, { kind: 'sso_hmac_secret' })
  ).json();
  await service.admin('DELETE', `/credentials/${issued.id}`);
  revokedSso = issued.secret;
  backendKey = (await service.admin('POST', '/partner-keys', { name: 'hints', scopes: ['cities:read'] })).json().key;
});

const resource = (headers: Record<string, string>) =>
  service.apps.integrations!.inject({ method: 'GET', url: '/api/v1/countries/', headers });

describe('/api/v1/ resources', () => {
  const cases: [string, () => Record<string, string>, RegExp][] = [
    ['no header at all', () => ({}), /No Authorization header\. Resource calls under \/api\/v1\/ take your SSO secret/],
    [
      'a Bearer token',
      () => ({ authorization: `Bearer ${tenant.credentials.sso_hmac_secret}` }),
      /scheme is `Api-Key`, not `Bearer`/,
    ],
    [
      'no scheme',
      () => ({ authorization: tenant.credentials.sso_hmac_secret }),
      /has no scheme: put `Api-Key` before the key/,
    ],
    [
      'the partner API key',
      () => ({ authorization: `Api-Key ${tenant.credentials.partner_api_key}` }),
      /A pis_pay_\.\.\. key is a partner API key, for the payment callback only/,
    ],
    [
      'the partner API key in X-API-KEY',
      () => ({ 'x-api-key': tenant.credentials.partner_api_key }),
      /X-API-KEY is read by the payment callback only/,
    ],
    [
      'a backend key',
      () => ({ authorization: `Api-Key ${backendKey}` }),
      /A pis_bk_\.\.\. key is a backend partner key, for the backend host/,
    ],
    [
      'the signing secret',
      () => ({ authorization: `Api-Key ${tenant.credentials.payment_endpoint_secret}` }),
      /signing secret: never send it/,
    ],
    ['the scheme alone', () => ({ authorization: 'Api-Key' }), /^No key after `Api-Key`\./],
    ['an unknown prefix', () => ({ authorization: 'Api-Key sk_live_123' }), /does not start with a prefix of ours/],
  ];
  it.each(cases)('%s: 401 UNAUTHORIZED with WWW-Authenticate and a hint', async (_name, headers, hint) => {
    const response = await resource(headers());
    expect(response.statusCode).toBe(401);
    expect(response.headers['www-authenticate']).toBe('Api-Key');
    const body = response.json();
    expect(body).toMatchObject({
      success: false,
      message: 'Unauthorized.',
      data: null,
      error: { code: 'UNAUTHORIZED' },
    });
    expect(body.error.hint).toMatch(hint);
    expect(body.error.hint).not.toContain(tenant.credentials.sso_hmac_secret.slice(8, 20));
  });

  it('gives a revoked SSO secret and one never issued the same hint', async () => {
    const revoked = (await resource({ authorization: `Api-Key ${revokedSso}` })).json();
    const forged = (await resource({ authorization: `Api-Key pis_sso_${'A'.repeat(43)}` })).json();
    expect(revoked.error.hint).toMatch(/^This pis_sso_\.\.\. key is not accepted/);
    expect(revoked).toEqual(forged);
  });

  it('also on an unknown path, which needs the credential first', async () => {
    const response = await service.apps.integrations!.inject({ method: 'GET', url: '/api/v1/nothing-here/' });
    expect(response.statusCode).toBe(401);
    expect(response.headers['www-authenticate']).toBe('Api-Key');
    expect(response.json().error.hint).toMatch(/No Authorization header/);
  });

  it('answers a Bearer token exactly as the document shows it', async () => {
    const document = (await service.apps.integrations!.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const documented = document.paths['/api/v1/countries/'].get.responses['401'];
    expect(Object.keys(documented.headers)).toEqual(['WWW-Authenticate']);
    const answered = await resource({ authorization: `Bearer ${tenant.credentials.sso_hmac_secret}` });
    expect(documented.content['application/json'].examples.UNAUTHORIZED.value).toEqual(answered.json());
  });

  it('a valid secret gets no challenge', async () => {
    const response = await resource({ authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}` });
    expect(response.statusCode).toBe(200);
    expect(response.headers['www-authenticate']).toBeUndefined();
  });
});

describe('over real HTTP', () => {
  it('the challenge and the hint reach a client as they leave the host', async () => {
    const resources = await fetch(`${service.urls.integrations}/api/v1/countries/`, {
      headers: { authorization: `Bearer ${tenant.credentials.sso_hmac_secret}` },
    });
    expect(resources.status).toBe(401);
    expect(resources.headers.get('www-authenticate')).toBe('Api-Key');
    expect((await resources.json()).error.hint).toMatch(/not `Bearer`/);
    const callback = await fetch(`${service.urls.integrations}/api/v1/payments/notify/`, {
      method: 'POST',
      headers: { authorization: `Api-Key ${tenant.credentials.partner_api_key}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(await callback.json()).toEqual({ error: 'Missing API key' });
    expect(callback.headers.get('www-authenticate')).toMatch(
      /^X-API-KEY error_description="The payment callback reads X-API-KEY/,
    );
  });
});

describe('the payment callback', () => {
  const notify = (headers: Record<string, string>) =>
    service.apps.integrations!.inject({ method: 'POST', url: '/api/v1/payments/notify/', headers, payload: {} });

  const cases: [string, () => Record<string, string>, string, RegExp][] = [
    [
      'no key',
      () => ({}),
      'Missing API key',
      /No X-API-KEY header\. The payment callback takes your partner API key: `X-API-KEY: pis_pay_\.\.\.`/,
    ],
    [
      'the key in Authorization',
      () => ({ authorization: `Api-Key ${tenant.credentials.partner_api_key}` }),
      'Missing API key',
      /reads X-API-KEY, not Authorization/,
    ],
    [
      'the SSO secret',
      () => ({ 'x-api-key': tenant.credentials.sso_hmac_secret }),
      'Unauthorized',
      /A pis_sso_\.\.\. key is an SSO secret, for resource calls/,
    ],
    [
      'a scheme word',
      () => ({ 'x-api-key': `Api-Key ${tenant.credentials.partner_api_key}` }),
      'Unauthorized',
      /takes the key alone/,
    ],
    [
      'a partner key not issued',
      () => ({ 'x-api-key': `pis_pay_${'B'.repeat(43)}` }),
      'Unauthorized',
      /This pis_pay_\.\.\. key is not accepted/,
    ],
  ];
  it.each(cases)('%s: the body as specified, the hint in the challenge', async (_name, headers, error, hint) => {
    const response = await notify(headers());
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({ error });
    const challenge = response.headers['www-authenticate'] as string;
    expect(challenge).toMatch(/^X-API-KEY error_description="[^"\\]*"$/);
    expect(challenge).toMatch(hint);
  });
});

describe('the backend host', () => {
  it('answers {"detail"} as specified, with the hint in the challenge', async () => {
    const cities = (headers: Record<string, string>) =>
      service.apps.backend!.inject({ method: 'GET', url: '/v1/cities/', headers });
    const withSso = await cities({ authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}` });
    expect(withSso.statusCode).toBe(401);
    expect(withSso.json()).toEqual({ detail: 'Invalid API key.' });
    expect(withSso.headers['www-authenticate']).toMatch(
      /^Api-Key error_description="A pis_sso_\.\.\. key is an SSO secret, for resource calls under \/api\/v1\/\. The backend host takes a backend partner key/,
    );
    const none = await cities({});
    expect(none.json()).toEqual({ detail: 'Authentication credentials were not provided.' });
    expect(none.headers['www-authenticate']).toMatch(/^Api-Key error_description="No Authorization header\./);
  });
});
