// Issued secrets: random 256 bits behind a readable prefix that names the kind, kept only as a
// SHA-256 digest. A lookup by digest leaks nothing useful through timing: an attacker learns at
// most a digest prefix, which does not help to forge a secret.
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

const CREDENTIAL_KINDS = [
  'sso_hmac_secret',
  'partner_api_key',
  'payment_endpoint_secret',
  'backend_partner_key',
  'test_sso_hmac_secret',
  'test_partner_api_key',
] as const;
export type CredentialKind = (typeof CREDENTIAL_KINDS)[number];

/** Tenant credential kinds an operator may issue more of (rotation). */
export const TENANT_CREDENTIAL_KINDS = [
  'sso_hmac_secret',
  'partner_api_key',
  'payment_endpoint_secret',
  'test_sso_hmac_secret',
  'test_partner_api_key',
] as const;
export type TenantCredentialKind = (typeof TENANT_CREDENTIAL_KINDS)[number];

/** Live data, or test data made with test credentials: the two never mix (src/payments/modes.ts). */
export const MODES = ['live', 'test'] as const;
export type Mode = (typeof MODES)[number];

/** The kind of a tenant's secret for each use, in each mode. */
export const KIND_IN_MODE = {
  sso: { live: 'sso_hmac_secret', test: 'test_sso_hmac_secret' },
  partner: { live: 'partner_api_key', test: 'test_partner_api_key' },
} as const satisfies Record<string, Record<Mode, TenantCredentialKind>>;

const PREFIX: Record<CredentialKind, string> = {
  sso_hmac_secret: 'pis_sso_',
  partner_api_key: 'pis_pay_',
  backend_partner_key: 'pis_bk_',
  // The Standard Webhooks format: `whsec_` and the base64 signing key, as partners' libraries expect.
  payment_endpoint_secret: 'whsec_',
  test_sso_hmac_secret: 'pis_test_sso_',
  test_partner_api_key: 'pis_test_pay_',
};

export function generateSecret(kind: CredentialKind): string {
  const key = randomBytes(32);
  return PREFIX[kind] + (kind === 'payment_endpoint_secret' ? key.toString('base64') : key.toString('base64url'));
}

/** Run on every authenticated request: the one-shot `hash` skips createHash's stream object. */
export function digestSecret(secret: string): string {
  return hash('sha256', secret, 'hex');
}

/** Whether a presented secret is shaped like one of `kind`: others need no database lookup. */
export function looksLike(kind: CredentialKind, secret: string): boolean {
  return secret.startsWith(PREFIX[kind]) && secret.length <= 128;
}

/** What is shown in listings to tell secrets apart: the prefix and the last four characters. */
export function secretHint(secret: string): string {
  const prefix = Object.values(PREFIX).find((candidate) => secret.startsWith(candidate));
  return `${prefix ?? secret.slice(0, secret.indexOf('_', 4) + 1)}…${secret.slice(-4)}`;
}

export function digestsEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * The kind whose readable prefix a presented secret carries (the longest prefix that matches), if
 * any: read from the text alone, it says nothing of whether the secret is valid.
 */
export function kindByPrefix(secret: string): CredentialKind | undefined {
  const kinds = [...CREDENTIAL_KINDS].sort((a, b) => PREFIX[b].length - PREFIX[a].length);
  return kinds.find((kind) => secret.startsWith(PREFIX[kind]));
}

/** The readable prefix of a kind's secrets, e.g. `pis_sso_`. */
export const prefixOf = (kind: CredentialKind): string => PREFIX[kind];
