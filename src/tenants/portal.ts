// The partner portal's sign-in (DECISIONS §11, "Partner portal"): a one-time link, asked for with
// the tenant's SSO secret or by an operator, opens a session of that tenant in one mode, read-only
// or read-write. Links and sessions are random tokens kept only as digests; a link opens one
// session, once, within its ten minutes; a link and its session end when their tenant is
// deactivated, when the SSO secret that asked for the link is revoked or the operator who did is
// deleted, when the session is ended (sign-out) or when it expires.
import { randomBytes } from 'node:crypto';
import { and, eq, gt, isNull, lte, or, type SQL } from 'drizzle-orm';
import type { Database, Executor } from '../db/client.js';
import { credentials, operators, portalLinks, portalSessions, tenants } from '../db/schema.js';
import type { Mode } from './secrets.js';
import { digestSecret } from './secrets.js';

export const PORTAL_ACCESS = ['read', 'write'] as const;
export type PortalAccess = (typeof PORTAL_ACCESS)[number];
export const PORTAL_LANGUAGES = ['en', 'ar'] as const;
export type PortalLanguage = (typeof PORTAL_LANGUAGES)[number];

export const PORTAL_LINK_MINUTES = 10;
export const PORTAL_SESSION_HOURS = 8;

/** Link tokens carry our prefix, so the log redaction of our keys (src/logger.ts) covers them. */
const LINK_PREFIX = 'pis_portal_';

export interface PortalLinkRequest {
  tenantId: string;
  mode: Mode;
  access: PortalAccess;
  language: PortalLanguage | null;
  /** Who asked: the SSO secret's hint, or an operator's name. */
  issuedBy: string;
  /** The SSO secret that asked, or null. */
  credentialId: string | null;
  /** The operator who asked, or null (the SSO secret, or the admin token). */
  operatorId: string | null;
}

export interface PortalSession {
  id: string;
  tenantId: string;
  tenantName: string;
  mode: Mode;
  access: PortalAccess;
  language: PortalLanguage | null;
  expiresAt: Date;
}

const newToken = (prefix = '') => prefix + randomBytes(32).toString('base64url');

/** A new link's token (for the URL, never stored) and expiry; expired links are swept meanwhile. */
export async function issuePortalLink(
  db: Executor,
  request: PortalLinkRequest,
  now = new Date(),
): Promise<{ id: string; token: string; expiresAt: Date }> {
  // A used link stays while the sessions it opened may: they name it.
  const sessionsOver = new Date(now.getTime() - PORTAL_SESSION_HOURS * 3600_000);
  await db
    .delete(portalLinks)
    .where(
      or(and(lte(portalLinks.expiresAt, now), isNull(portalLinks.usedAt)), lte(portalLinks.expiresAt, sessionsOver)),
    );
  const token = newToken(LINK_PREFIX);
  const expiresAt = new Date(now.getTime() + PORTAL_LINK_MINUTES * 60_000);
  const [row] = await db
    .insert(portalLinks)
    .values({ ...request, digest: digestSecret(token), expiresAt })
    .returning({ id: portalLinks.id });
  return { id: row.id, token, expiresAt };
}

/** The SSO secret and the operator that asked for a link, where one did (left joins). */
const ISSUING_CREDENTIAL = eq(credentials.id, portalLinks.credentialId);
const ISSUING_OPERATOR = eq(operators.id, portalLinks.operatorId);

/** A link still in force (its tenant and issuer joined): its tenant active, what asked for it not revoked or deleted. */
function linkInForce(): SQL | undefined {
  return and(
    eq(tenants.isActive, true),
    or(isNull(portalLinks.credentialId), isNull(credentials.revokedAt)),
    or(isNull(portalLinks.operatorId), isNull(operators.deletedAt)),
  );
}

/**
 * Opens a session with a link: the session's token (for the cookie) and what it may see, or null
 * when the link is unknown, used, expired, or its tenant inactive. The link is spent in the same
 * transaction, so two uses at once open one session.
 */
export function openPortalSession(
  db: Database,
  linkToken: string,
  now = new Date(),
): Promise<{ token: string; session: PortalSession } | null> {
  if (!linkToken.startsWith(LINK_PREFIX) || linkToken.length > 100) return Promise.resolve(null);
  return db.transaction(async (tx) => {
    const [link] = await tx
      .update(portalLinks)
      .set({ usedAt: now })
      .where(
        and(
          eq(portalLinks.digest, digestSecret(linkToken)),
          isNull(portalLinks.usedAt),
          gt(portalLinks.expiresAt, now),
        ),
      )
      .returning();
    if (!link) return null;
    const [tenant] = await tx
      .select({ name: tenants.name })
      .from(portalLinks)
      .innerJoin(tenants, eq(tenants.id, portalLinks.tenantId))
      .leftJoin(credentials, ISSUING_CREDENTIAL)
      .leftJoin(operators, ISSUING_OPERATOR)
      .where(and(eq(portalLinks.id, link.id), linkInForce()));
    if (!tenant) return null;
    await tx.delete(portalSessions).where(lte(portalSessions.expiresAt, now));
    const token = newToken();
    const expiresAt = new Date(now.getTime() + PORTAL_SESSION_HOURS * 3600_000);
    const [row] = await tx
      .insert(portalSessions)
      .values({ digest: digestSecret(token), linkId: link.id, expiresAt })
      .returning({ id: portalSessions.id });
    return {
      token,
      session: {
        id: row.id,
        tenantId: link.tenantId,
        tenantName: tenant.name,
        mode: link.mode,
        access: link.access,
        language: link.language as PortalLanguage | null,
        expiresAt,
      },
    };
  });
}

/** The live session of a cookie's token, read on every request: a deactivated tenant's sessions end at once. */
export async function findPortalSession(
  db: Executor,
  token: string | undefined,
  now = new Date(),
): Promise<PortalSession | null> {
  if (!token || token.length > 100) return null;
  const [row] = await db
    .select({ session: portalSessions, link: portalLinks, tenantName: tenants.name })
    .from(portalSessions)
    .innerJoin(portalLinks, eq(portalLinks.id, portalSessions.linkId))
    .innerJoin(tenants, eq(tenants.id, portalLinks.tenantId))
    .leftJoin(credentials, ISSUING_CREDENTIAL)
    .leftJoin(operators, ISSUING_OPERATOR)
    .where(and(eq(portalSessions.digest, digestSecret(token)), gt(portalSessions.expiresAt, now), linkInForce()));
  if (!row) return null;
  const { session, link } = row;
  return {
    id: session.id,
    tenantId: link.tenantId,
    tenantName: row.tenantName,
    mode: link.mode,
    access: link.access,
    language: link.language as PortalLanguage | null,
    expiresAt: session.expiresAt,
  };
}

export async function endPortalSession(db: Executor, token: string): Promise<void> {
  await db.delete(portalSessions).where(eq(portalSessions.digest, digestSecret(token)));
}
