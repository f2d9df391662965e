// The check every in-process answer goes through (test/support/documented-answers.ts): it passes
// what the admin document says and names the operation, the status and the mismatch otherwise.
import type { LightMyRequestResponse } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { useApps } from '../../support/apps.js';
import { compileDocument, mismatchOf } from '../../support/documented-answers.js';

/** An answer as `inject` gives it, made up. */
function answer(statusCode: number, headers: Record<string, string>, payload: string) {
  const response = { statusCode, headers, payload, rawPayload: Buffer.from(payload) };
  return response as unknown as LightMyRequestResponse;
}

const json = { 'content-type': 'application/json; charset=utf-8' };

describe('the documented-answer check', () => {
  const service = useApps(['admin']);
  let api: Awaited<ReturnType<typeof compileDocument>>;
  beforeAll(async () => {
    api = await compileDocument((await service.apps.admin!.inject({ url: '/admin/v1/openapi.json' })).payload);
  });
  const check = (method: string, url: string, response: LightMyRequestResponse) =>
    mismatchOf(api, { method, url, response });

  it('passes a real answer, and leaves requests outside the document alone', async () => {
    const listed = await service.admin('GET', '/tenants');
    expect(listed.statusCode).toBe(200);
    expect(check('GET', '/admin/v1/tenants', listed)).toBeNull();
    expect(check('GET', '/metrics', answer(200, { 'content-type': 'text/plain' }, 'x 1'))).toBeNull();
  });

  it('names the operation, the status and the mismatch', () => {
    const limited = answer(
      429,
      { ...json, 'retry-after': 'soon' },
      '{"error": {"code": "RATE_LIMITED", "message": "x"}}',
    );
    expect(check('GET', '/admin/v1/tenants', limited)).toMatch(/^listTenants answered 429 .*: header .*retry-after/);
    const extra = answer(
      429,
      { ...json, 'retry-after': '3', 'x-extra': '1' },
      '{"error": {"code": "RATE_LIMITED", "message": "x"}}',
    );
    expect(check('GET', '/admin/v1/tenants', extra)).toMatch(/header x-extra is not documented$/);
    const error = JSON.stringify({ error: { code: 'NOT_FOUND', message: 'Tenant not found.' } });
    expect(check('GET', '/admin/v1/tenants', answer(418, json, error))).toMatch(
      /^listTenants answered 418 to GET \/admin\/v1\/tenants: the document lists no 418 \(it lists 200, 401, /,
    );
    expect(check('GET', '/admin/v1/tenants/', answer(401, { 'content-type': 'text/html' }, '<p>no</p>'))).toMatch(
      /^listTenants answered 401 to GET \/admin\/v1\/tenants\/: Content-Type text\/html is not documented/,
    );
    expect(check('GET', '/admin/v1/tenants', answer(401, {}, error))).toMatch(/a body without a Content-Type/);
    expect(check('GET', '/admin/v1/tenants', answer(401, json, '{"error": {"code": "NOT_FOUND"}}'))).toMatch(
      /^listTenants answered 401 .*: body\/error must have required property 'message'/,
    );
  });
});
