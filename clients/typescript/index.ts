// A typed client of the partner-facing hosts: the types come from their OpenAPI documents
// (generated/, by `npm run generate:client`), the calls from openapi-fetch. Paths, parameters,
// bodies and answers are checked by the compiler:
//
//   const api = integrationsClient({ baseUrl: 'https://partners.example.com', ssoSecret });
//   const { data, error } = await api.GET('/api/v1/cities/', { params: { query: { limit: 20 } } });
import createClient, { type Client } from 'openapi-fetch';
import type { paths as BackendPaths } from './generated/backend.js';
import type { paths as IntegrationsPaths } from './generated/integrations.js';

export type { BackendPaths, IntegrationsPaths };

export interface IntegrationsClientOptions {
  /** The integrations host, e.g. `https://partners.example.com` (no path). */
  baseUrl: string;
  /** The tenant's SSO HMAC secret (`pis_sso_...`), sent as `Authorization: Api-Key <secret>`. */
  ssoSecret: string;
  /** The tenant's partner API key (`pis_pay_...`), sent as `X-API-KEY` on the payment callback only. */
  partnerApiKey?: string;
  fetch?: typeof globalThis.fetch;
}

/** The integrations host: countries, cities, trips, suggested prompts and the payment callback. */
export function integrationsClient(options: IntegrationsClientOptions): Client<IntegrationsPaths> {
  const client = createClient<IntegrationsPaths>({
    baseUrl: options.baseUrl,
    headers: { authorization: `Api-Key ${options.ssoSecret}` },
    ...(options.fetch && { fetch: options.fetch }),
  });
  // The callback takes the partner API key instead of the SSO secret.
  client.use({
    onRequest({ request, schemaPath }) {
      if (!schemaPath.startsWith('/api/v1/payments/notify')) return request;
      request.headers.delete('authorization');
      if (options.partnerApiKey) request.headers.set('x-api-key', options.partnerApiKey);
      return request;
    },
  });
  return client;
}

export interface BackendClientOptions {
  /** The backend host, e.g. `https://geo.example.com`. */
  baseUrl: string;
  /** A backend partner key (`pis_bk_...`) with the scopes of the lists it reads. */
  apiKey: string;
  fetch?: typeof globalThis.fetch;
}

/** The backend host: countries and cities as plain paged lists. */
export function backendClient(options: BackendClientOptions): Client<BackendPaths> {
  return createClient<BackendPaths>({
    baseUrl: options.baseUrl,
    headers: { authorization: `Api-Key ${options.apiKey}` },
    ...(options.fetch && { fetch: options.fetch }),
  });
}
