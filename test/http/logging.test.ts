import { describe, expect, it } from 'vitest';
import { useApps, useTenant } from '../support/apps.js';
import { TEST_ADMIN_TOKEN } from '../support/env.js';
import { loggerInto } from '../support/logs.js';

describe('request logs', () => {
  const lines: string[] = [];
  const service = useApps(['integrations'], { logger: loggerInto(lines, 'debug'), listen: true });
  const tenant = useTenant(service);

  it('are JSON lines with the request id, and never carry a secret, a key header or the admin token', async () => {
    const { sso_hmac_secret, partner_api_key } = tenant.credentials;
    await fetch(`${service.urls.integrations}/api/v1/trips/00000000-0000-4000-8000-000000000000/`, {
      headers: { authorization: `Api-Key ${sso_hmac_secret}`, 'x-request-id': 'trace-me-1' },
    });
    await fetch(`${service.urls.integrations}/api/v1/payments/notify/`, {
      method: 'POST',
      headers: { 'x-api-key': partner_api_key, 'content-type': 'application/json', 'x-request-id': 'trace-me-2' },
      body: '{}',
    });
    const text = lines.join('\n');
    for (const secret of [...Object.values(tenant.credentials), TEST_ADMIN_TOKEN]) expect(text).not.toContain(secret);
    const records = lines.map((line) => JSON.parse(line));
    const completed = records.filter((record) => record.msg === 'request completed');
    expect(completed.map((record) => record.request_id)).toEqual(expect.arrayContaining(['trace-me-1', 'trace-me-2']));
    expect(completed.find((record) => record.request_id === 'trace-me-1')).toMatchObject({
      listener: 'integrations',
      method: 'GET',
      level: 'info',
    });
  });

  it('redact a key or secret wherever the URL carries it: path, any query name, percent-encoded', async () => {
    const { sso_hmac_secret, partner_api_key, payment_endpoint_secret } = tenant.credentials;
    const encoded = encodeURIComponent(partner_api_key).replace('_', '%5F');
    for (const url of [
      `/api/v1/countries/${partner_api_key}/?x=${sso_hmac_secret}`,
      `/api/v1/countries/?limit=1&note=${payment_endpoint_secret}`,
      `/api/v1/countries/?q=${encoded}`,
    ]) {
      await fetch(`${service.urls.integrations}${url}`, { headers: { 'x-request-id': 'trace-keys' } });
    }
    const logged = lines.map((line) => JSON.parse(line)).filter((record) => record.request_id === 'trace-keys');
    expect(logged.length).toBe(3);
    const text = JSON.stringify(logged);
    for (const secret of [sso_hmac_secret, partner_api_key, payment_endpoint_secret, encoded]) {
      expect(text).not.toContain(secret.slice(8));
    }
    expect(logged[0].url).toBe('/api/v1/countries/[redacted]/?x=[redacted]');
  });

  it('redact a signing secret whole, its base64 slashes, pluses and padding included', async () => {
    const secret = 'whsec_Ab/9+cD/ef+GhIj0KlMn/oPqRsTuVwXyZ012345678=';
    for (const url of [
      `/api/v1/countries/?note=${secret}&limit=1`,
      `/api/v1/countries/?q=${encodeURIComponent(secret)}`,
    ]) {
      await fetch(`${service.urls.integrations}${url}`, { headers: { 'x-request-id': 'trace-whsec' } });
    }
    const logged = lines.map((line) => JSON.parse(line)).filter((record) => record.request_id === 'trace-whsec');
    expect(logged.map((record) => record.url)).toEqual([
      '/api/v1/countries/?note=[redacted]&limit=1',
      '/api/v1/countries/?q=[redacted]',
    ]);
  });
});
