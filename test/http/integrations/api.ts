// Requests to the integrations host as a tenant, and the envelope every answer must be in.
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { TestApps } from '../../support/apps.js';

export type ApiRequest = (
  method: InjectOptions['method'],
  url: string,
  payload?: unknown,
  headers?: Record<string, string>,
) => Promise<LightMyRequestResponse>;

/** Requests with `Authorization: Api-Key <secret>` (no header at all when `secret` is null). */
export function apiAs(service: TestApps, secret: string | null): ApiRequest {
  return (method, url, payload, headers = {}) =>
    service.apps.integrations!.inject({
      method,
      url,
      headers: { ...(secret !== null && { authorization: `Api-Key ${secret}` }), ...headers },
      ...(payload !== undefined && { payload: payload as InjectOptions['payload'] }),
    });
}

/** Asserts a success envelope with `status`, and returns its `data`. */
export function expectOk(response: LightMyRequestResponse, status = 200): any {
  const body = response.json();
  expect({ status: response.statusCode, body }).toMatchObject({ status, body: { success: true, error: null } });
  expect(Object.keys(body).sort()).toEqual(['data', 'error', 'message', 'success']);
  expect(typeof body.message).toBe('string');
  return body.data;
}

/** Asserts an error envelope with `status` and `code`, and returns its `error`. */
export function expectError(response: LightMyRequestResponse, status: number, code: string): any {
  const body = response.json();
  expect({ status: response.statusCode, body }).toMatchObject({
    status,
    body: { success: false, data: null, error: { code } },
  });
  expect(Object.keys(body).sort()).toEqual(['data', 'error', 'message', 'success']);
  expect(body.message).toEqual(expect.any(String));
  expect(body.message.length).toBeGreaterThan(0);
  return body.error;
}
