// Credentials: issue, rotate (issuing never revokes), revoke, and the one "who is this?" function
// per kind. Unknown, revoked, wrong-kind and inactive-tenant secrets all answer null ("nobody").
// Answers are cached for CREDENTIAL_CACHE_MS at most (src/cache.ts): a revocation or deactivation
// takes effect on the next request in the process that made it, in every other as soon as the
// invalidation notice arrives and within CREDENTIAL_CACHE_MS at worst, while the hot paths skip
// one query per request.
import { and, asc, eq, isNotNull, isNull, or } from 'drizzle-orm';
import { approximateBytes, type CacheOptions, type Caches, CREDENTIAL_CACHE_MS } from '../cache.js';
import { type Database, type Executor, runIn } from '../db/client.js';
import { credentials, credentialUsage, type TenantRow, tenants } from '../db/schema.js';
import { statement } from '../db/statements.js';
import { invalidField, notFound } from '../errors.js';
import { noteCredentialUse } from './credential-use.js';
import type { SecretBox } from './secret-box.js';
import {
  type CredentialKind,
  digestSecret,
  digestsEqual,
  generateSecret,
  KIND_IN_MODE,
  looksLike,
  type Mode,
  secretHint,
  type TenantCredentialKind,
} from './secrets.js';

export const BACKEND_SCOPES = ['countries:read', 'cities:read'] as const;
export type BackendScope = (typeof BACKEND_SCOPES)[number];

export type CredentialRow = typeof credentials.$inferSelect;
/** A credential with when it was last presented (to the minute; null: never since recorded). */
export type CredentialWithUse = CredentialRow & { lastUsedAt: Date | null };

/** Each cache of answers holds at most this (some thousands of credentials). */
const RESOLVED_MAX_BYTES = 4 * 1024 * 1024;
const resolvedCache = <V>(name: string): CacheOptions<V> => ({
  name,
  ttlMs: CREDENTIAL_CACHE_MS,
  maxBytes: RESOLVED_MAX_BYTES,
  sizeOf: approximateBytes,
});
const RESOLVED_TENANTS = resolvedCache<TenantCredential | null>('tenant_credentials');
const RESOLVED_PARTNERS = resolvedCache<BackendPartner | null>('backend_partner_keys');

/** Issues a new secret of `kind` for a tenant; earlier ones stay valid until revoked. */
export async function issueCredential(
  db: Executor,
  tenantId: string,
  kind: TenantCredentialKind,
  sealSecret: (secret: string) => string,
): Promise<{ credential: CredentialRow; secret: string }> {
  const secret = generateSecret(kind);
  const [credential] = await db
    .insert(credentials)
    .values({
      tenantId,
      kind,
      digest: digestSecret(secret),
      hint: secretHint(secret),
      sealedSecret: kind === 'payment_endpoint_secret' ? sealSecret(secret) : null,
    })
    .returning();
  return { credential, secret };
}

export async function issuePartnerKey(
  db: Executor,
  input: { name: string; scopes: string[]; tenantId: string | null },
): Promise<{ credential: CredentialRow; secret: string }> {
  const unknownScope = input.scopes.find((scope) => !(BACKEND_SCOPES as readonly string[]).includes(scope));
  if (unknownScope !== undefined) {
    throw invalidField('scopes', `unknown scope "${unknownScope}"; known: ${BACKEND_SCOPES.join(', ')}`);
  }
  const secret = generateSecret('backend_partner_key');
  const [credential] = await db
    .insert(credentials)
    .values({
      tenantId: input.tenantId,
      kind: 'backend_partner_key',
      digest: digestSecret(secret),
      hint: secretHint(secret),
      name: input.name,
      scopes: [...new Set(input.scopes)],
    })
    .returning();
  return { credential, secret };
}

export async function listCredentials(
  db: Executor,
  filter: { tenantId?: string; kind?: CredentialKind; id?: string },
): Promise<CredentialWithUse[]> {
  const conditions = [
    filter.tenantId ? eq(credentials.tenantId, filter.tenantId) : undefined,
    filter.kind ? eq(credentials.kind, filter.kind) : undefined,
    filter.id ? eq(credentials.id, filter.id) : undefined,
  ];
  const rows = await db
    .select({ credential: credentials, lastUsedAt: credentialUsage.lastUsedAt })
    .from(credentials)
    .leftJoin(credentialUsage, eq(credentialUsage.credentialId, credentials.id))
    .where(and(...conditions))
    .orderBy(asc(credentials.createdAt));
  return rows.map((row) => ({ ...row.credential, lastUsedAt: row.lastUsedAt }));
}

/** Revokes a credential of one of `kinds`; revoking twice is harmless. */
export async function revokeCredential(
  db: Executor,
  caches: Caches,
  id: string,
  kinds: readonly CredentialKind[],
): Promise<CredentialWithUse> {
  const [existing] = await listCredentials(db, { id });
  if (!existing || !kinds.includes(existing.kind as CredentialKind)) throw notFound('Credential');
  if (existing.revokedAt) return existing;
  const [revoked] = await db
    .update(credentials)
    .set({ revokedAt: new Date() })
    .where(eq(credentials.id, id))
    .returning();
  caches.invalidate();
  return { ...revoked, lastUsedAt: existing.lastUsedAt };
}

/**
 * A tenant's credential as presented: which one (rate limits count per credential), whose, and in
 * which mode: a test key sees and moves only test data, a live key only live data.
 */
export interface TenantCredential {
  credentialId: string;
  tenant: TenantRow;
  mode: Mode;
}

/** The kind (and so the mode) of a secret for `use`, told by its prefix; null when it is neither. */
function kindOf(use: keyof typeof KIND_IN_MODE, secret: string | undefined) {
  if (!secret) return null;
  for (const [mode, kind] of Object.entries(KIND_IN_MODE[use]) as [Mode, TenantCredentialKind][]) {
    if (looksLike(kind, secret)) return { mode, kind };
  }
  return null;
}

/** Notes the use of the credential `found` names, if any, and gives it back. */
function noted<T>(db: Executor, caches: Caches, found: T, idOf: (value: NonNullable<T>) => string): T {
  if (found) noteCredentialUse(db, caches, idOf(found));
  return found;
}

async function resolveTenantCredential(
  db: Executor,
  caches: Caches,
  use: keyof typeof KIND_IN_MODE,
  secret: string | undefined,
): Promise<TenantCredential | null> {
  const presented = kindOf(use, secret);
  if (!presented) return null;
  const { kind, mode } = presented;
  const digest = digestSecret(secret!);
  const found = await caches
    .cache(RESOLVED_TENANTS)
    .get(`${kind}:${digest}`, () => findTenantByDigest(db, kind, mode, digest));
  return noted(db, caches, found, (credential) => credential.credentialId);
}

async function findTenantByDigest(
  db: Executor,
  kind: TenantCredentialKind,
  mode: Mode,
  digest: string,
): Promise<TenantCredential | null> {
  const [found] = await db
    .select({ credentialId: credentials.id, tenant: tenants, digest: credentials.digest })
    .from(credentials)
    .innerJoin(tenants, eq(tenants.id, credentials.tenantId))
    .where(
      and(
        eq(credentials.digest, digest),
        eq(credentials.kind, kind),
        isNull(credentials.revokedAt),
        eq(tenants.isActive, true),
      ),
    );
  return found && digestsEqual(found.digest, digest)
    ? { credentialId: found.credentialId, tenant: found.tenant, mode }
    : null;
}

/** The tenant whose SSO HMAC secret (live or test) this is (`Authorization: Api-Key` on `/api/v1/`), or null. */
export const resolveSsoSecret = (db: Executor, caches: Caches, secret: string | undefined) =>
  resolveTenantCredential(db, caches, 'sso', secret);

/** The tenant whose partner API key (live or test) this is (`X-API-KEY` on the payment callback), or null. */
export const resolvePartnerApiKey = (db: Executor, caches: Caches, secret: string | undefined) =>
  resolveTenantCredential(db, caches, 'partner', secret);

export interface BackendPartner {
  keyId: string;
  tenantId: string | null;
  scopes: string[];
}

/** The backend partner key presented on the backend host, with its scopes, or null. */
export async function resolveBackendPartnerKey(
  db: Executor,
  caches: Caches,
  secret: string | undefined,
): Promise<BackendPartner | null> {
  if (!secret || !looksLike('backend_partner_key', secret)) return null;
  const digest = digestSecret(secret);
  const found = await caches.cache(RESOLVED_PARTNERS).get(digest, () => findPartnerByDigest(db, digest));
  return noted(db, caches, found, (partner) => partner.keyId);
}

async function findPartnerByDigest(db: Executor, digest: string): Promise<BackendPartner | null> {
  const [found] = await db
    .select({
      id: credentials.id,
      tenantId: credentials.tenantId,
      scopes: credentials.scopes,
      digest: credentials.digest,
    })
    .from(credentials)
    .leftJoin(tenants, eq(tenants.id, credentials.tenantId))
    .where(
      and(
        eq(credentials.digest, digest),
        eq(credentials.kind, 'backend_partner_key'),
        isNull(credentials.revokedAt),
        // A platform key has no tenant; a tenant's key dies with its tenant's deactivation.
        or(isNull(credentials.tenantId), eq(tenants.isActive, true)),
      ),
    );
  if (!found || !digestsEqual(found.digest, digest)) return null;
  return { keyId: found.id, tenantId: found.tenantId, scopes: found.scopes };
}

/**
 * The tenant's active payment endpoint signing secrets, sealed, newest first: `payment_endpoint_secrets`
 * (migration 0014), which the payment request worker's take reads too.
 */
export async function sealedPaymentEndpointSecrets(db: Executor, tenantId: string): Promise<string[]> {
  const [row] = await runIn(db)(PAYMENT_ENDPOINT_SECRETS, [tenantId]);
  return row.sealed;
}

const PAYMENT_ENDPOINT_SECRETS = statement<[tenantId: string], { sealed: string[] }>(
  'select payment_endpoint_secrets($1::uuid) as sealed',
);

/**
 * How many active signing secrets open with none of the box's keys: the service could sign no
 * payment request of their tenants.
 */
export async function countUnopenableSecrets(db: Executor, box: SecretBox): Promise<number> {
  const rows = await db
    .select({ sealed: credentials.sealedSecret })
    .from(credentials)
    .where(and(isNotNull(credentials.sealedSecret), isNull(credentials.revokedAt)));
  return rows.filter((row) => !box.opens(row.sealed!)).length;
}

/**
 * The fingerprints of the keys that open the stored signing secrets, revoked ones included: the
 * keys a restore of them will need.
 */
export async function keysOfSealedSecrets(db: Executor, box: SecretBox): Promise<string[]> {
  const rows = await db
    .select({ sealed: credentials.sealedSecret })
    .from(credentials)
    .where(isNotNull(credentials.sealedSecret));
  return box.fingerprintsOpening(rows.map((row) => row.sealed!));
}

interface RekeySummary {
  /** Sealed secrets found (payment endpoint signing secrets, revoked ones included). */
  secrets: number;
  /** Sealed again under the current key. */
  resealed: number;
  /** Ids of credentials whose secret no configured key opens: left as they are. */
  unreadable: string[];
}

/** Seals every stored secret under the box's current key, in one transaction holding their rows. */
export async function resealSecrets(db: Database, box: SecretBox): Promise<RekeySummary> {
  return db.transaction(async (tx) => {
    const rows = await tx
      .select({ id: credentials.id, sealed: credentials.sealedSecret })
      .from(credentials)
      .where(isNotNull(credentials.sealedSecret))
      .for('update');
    const summary: RekeySummary = { secrets: rows.length, resealed: 0, unreadable: [] };
    for (const row of rows) {
      let resealed: string | null;
      try {
        resealed = box.reseal(row.sealed!);
      } catch {
        summary.unreadable.push(row.id);
        continue;
      }
      if (resealed === null) continue;
      await tx.update(credentials).set({ sealedSecret: resealed }).where(eq(credentials.id, row.id));
      summary.resealed++;
    }
    return summary;
  });
}
