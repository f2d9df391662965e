// What a refused credential should have been, for the partner's developer: read from the shape
// of the headers sent and the readable prefix of the secret, never from a look-up, so a hint says
// nothing of whether a secret is valid for some tenant. The same hint for a live secret that was
// revoked, mistyped or belongs to an inactive tenant; the secret itself is never echoed.
import type { IncomingHttpHeaders } from 'node:http';
import { kindByPrefix, prefixOf } from '../tenants/index.js';

/** Where a credential is expected. */
export type CredentialPlace = 'resources' | 'backend' | 'callback';

interface PlaceRules {
  /**
   * The kinds this place takes, for which the only hint is "not accepted". By name: the test kinds
   * (DECISIONS §10, test mode) are taken where their live kinds are.
   */
  takes: readonly string[];
  /** What to send, as one sentence. */
  expects: string;
}

const PLACES: Record<CredentialPlace, PlaceRules> = {
  resources: {
    takes: ['sso_hmac_secret', 'test_sso_hmac_secret'],
    expects: `Resource calls under /api/v1/ take your SSO secret: \`Authorization: Api-Key ${prefixOf('sso_hmac_secret')}...\`.`,
  },
  backend: {
    takes: ['backend_partner_key'],
    expects: `The backend host takes a backend partner key: \`Authorization: Api-Key ${prefixOf('backend_partner_key')}...\`.`,
  },
  callback: {
    takes: ['partner_api_key', 'test_partner_api_key'],
    expects: `The payment callback takes your partner API key: \`X-API-KEY: ${prefixOf('partner_api_key')}...\`.`,
  },
};

/** What each kind is for, to say where a secret of the wrong kind belongs. */
const USE_OF: Record<string, string> = {
  sso_hmac_secret: 'an SSO secret, for resource calls under /api/v1/',
  test_sso_hmac_secret: 'a test SSO secret, for resource calls under /api/v1/',
  partner_api_key: 'a partner API key, for the payment callback only',
  test_partner_api_key: 'a test partner API key, for the payment callback only',
  backend_partner_key: 'a backend partner key, for the backend host (/v1/)',
  payment_endpoint_secret: 'your payment endpoint signing secret: never send it, verify our requests with it',
};

const SCHEMES_BY_NAME = ['Bearer', 'Basic', 'Token', 'Digest'];

function secretHint(place: CredentialPlace, secret: string): string {
  const { takes, expects } = PLACES[place];
  const kind = kindByPrefix(secret);
  if (!kind) return `The key does not start with a prefix of ours. ${expects}`;
  if (takes.includes(kind)) {
    return (
      `This ${prefixOf(kind)}... key is not accepted: check that it was copied whole and has not been ` +
      'revoked, and that your tenant is active (your operator can tell).'
    );
  }
  return `A ${prefixOf(kind)}... key is ${USE_OF[kind] ?? kind.replaceAll('_', ' ')}. ${expects}`;
}

function authorizationHint(place: CredentialPlace, headers: IncomingHttpHeaders): string {
  const { expects } = PLACES[place];
  const authorization = headers.authorization?.trim();
  if (!authorization) {
    return headers['x-api-key'] !== undefined
      ? `X-API-KEY is read by the payment callback only. ${expects}`
      : `No Authorization header. ${expects}`;
  }
  const [scheme, secret, ...rest] = authorization.split(/\s+/);
  if (secret === undefined) {
    return scheme.toLowerCase() === 'api-key'
      ? `No key after \`Api-Key\`. ${expects}`
      : `The Authorization header has no scheme: put \`Api-Key\` before the key. ${expects}`;
  }
  if (scheme.toLowerCase() !== 'api-key') {
    const named = SCHEMES_BY_NAME.find((name) => name.toLowerCase() === scheme.toLowerCase());
    return `The scheme is \`Api-Key\`, not ${named ? `\`${named}\`` : 'the one sent'}. ${expects}`;
  }
  if (rest.length > 0) return `Send one key after \`Api-Key\`, nothing else. ${expects}`;
  return secretHint(place, secret);
}

function apiKeyHeaderHint(headers: IncomingHttpHeaders): string {
  const { expects } = PLACES.callback;
  const apiKey = headers['x-api-key'];
  if (typeof apiKey !== 'string' || apiKey.trim() === '') {
    return headers.authorization !== undefined
      ? `The payment callback reads X-API-KEY, not Authorization. ${expects}`
      : `No X-API-KEY header. ${expects}`;
  }
  const [first, second] = apiKey.trim().split(/\s+/);
  if (second !== undefined) return `X-API-KEY takes the key alone, without a scheme word. ${expects}`;
  return secretHint('callback', first);
}

/** What to fix, for a request refused 401 at `place`: plain ASCII, fit for a header's quoted string too. */
export function credentialHint(place: CredentialPlace, headers: IncomingHttpHeaders): string {
  return place === 'callback' ? apiKeyHeaderHint(headers) : authorizationHint(place, headers);
}

/**
 * A `WWW-Authenticate` challenge (RFC 9110 section 11.6.1) naming `scheme`, with the hint as
 * `error_description` as RFC 6750 does for Bearer: HTTP clients show it, and no body changes.
 */
export function challenge(scheme: string, hint?: string): string {
  return hint ? `${scheme} error_description="${hint.replace(/["\\]/g, "'")}"` : scheme;
}

/** The `WWW-Authenticate` header of a documented 401 response, for the OpenAPI documents. */
export const challengeHeader = (description: string) => ({
  'WWW-Authenticate': { type: 'string' as const, description },
});
