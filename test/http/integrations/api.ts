// Requests to the integrations host as a tenant, and the envelope every answer must be in.
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { components, operations } from '../../../clients/typescript/generated/integrations.js';
import type { TestApps } from '../../support/apps.js';

/** An operation of the integrations document (clients/typescript/generated), by its operationId. */
export type IntegrationsOperation = keyof operations;

/** The `data` of the success envelope (200 or 201) the integrations document gives `O`. */
export type OkData<O extends IntegrationsOperation> = {
  [S in keyof operations[O]['responses']]: S extends 200 | 201
    ? operations[O]['responses'][S] extends { content: { 'application/json': { data: infer Data } } }
      ? Data
      : never
    : never;
}[keyof operations[O]['responses']];

/** The `error` of the error envelope, as the integrations document gives it. */
export type EnvelopeError = components['schemas']['ErrorEnvelope']['error'];

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

/**
 * Asserts a success envelope with `status`, and returns its `data` typed as the document says for
 * operation `O`: `expectOk<'getTrip'>(response).trip`.
 */
export function expectOk<O extends IntegrationsOperation>(response: LightMyRequestResponse, status = 200): OkData<O> {
  const body = response.json<{ data: OkData<O>; message: unknown }>();
  expect({ status: response.statusCode, body }).toMatchObject({ status, body: { success: true, error: null } });
  expect(Object.keys(body).sort()).toEqual(['data', 'error', 'message', 'success']);
  expect(typeof body.message).toBe('string');
  return body.data;
}

/** Asserts an error envelope with `status` and `code`, and returns its `error`. */
export function expectError(response: LightMyRequestResponse, status: number, code: string): EnvelopeError {
  const body = response.json<{ error: EnvelopeError; message: string }>();
  expect({ status: response.statusCode, body }).toMatchObject({
    status,
    body: { success: false, data: null, error: { code } },
  });
  expect(Object.keys(body).sort()).toEqual(['data', 'error', 'message', 'success']);
  expect(body.message).toEqual(expect.any(String));
  expect(body.message.length).toBeGreaterThan(0);
  return body.error;
}
