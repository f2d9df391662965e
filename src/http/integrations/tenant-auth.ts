// The tenant of an `/api/v1/` request comes from its credential, once, and nowhere else:
// a tenant named in the path, query or body is refused (spec §1 rule 2).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Executor } from '../../db/client.js';
import { AppError, ErrorCode } from '../../errors.js';
import { cachedSsoSecret, type Mode, resolveSsoSecret, type TenantRow } from '../../tenants/index.js';
import { apiKeyFromAuthorization } from '../api-key.js';
import type { CachedReadAccess } from '../cached-reads.js';
import { credentialHint } from '../credential-hints.js';
import type { RateLimitGuard } from '../rate-limit.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated tenant; set on every `/api/v1/` resource request. */
    tenant: TenantRow;
    /** The mode of its credential: a test secret sees and changes only test payment data. */
    mode: Mode;
  }
}

const TENANT_FIELDS = new Set(['tenant', 'tenant_id', 'tenant_slug', 'tenants']);

/** How the tenant of a request is found: its SSO secret, under the rate limits. */
interface TenantAuthentication {
  db: Executor;
  limits: RateLimitGuard;
}

async function tenantOf({ db, limits }: TenantAuthentication, request: FastifyRequest, reply: FastifyReply) {
  const credential = await resolveSsoSecret(db, apiKeyFromAuthorization(request.headers.authorization));
  if (!credential) {
    await limits.authenticationFailed(request, reply);
    reply.header('www-authenticate', 'Api-Key');
    throw new AppError(ErrorCode.UNAUTHORIZED, undefined, undefined, credentialHint('resources', request.headers));
  }
  await limits.authenticated(request, reply, credential.credentialId);
  return credential;
}

export function authenticateTenant(authentication: TenantAuthentication) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const { tenant, mode } = await tenantOf(authentication, request, reply);
    request.tenant = tenant;
    request.mode = mode;
  };
}

/** The same check for cached reads (src/http/cached-reads.ts): a tenant's answers are its own. */
export function cachedReadAccess({ db, limits }: TenantAuthentication): CachedReadAccess {
  return {
    identify(authorization) {
      const credential = cachedSsoSecret(db, apiKeyFromAuthorization(authorization));
      return credential
        ? { credentialId: credential.credentialId, audience: credential.tenant.id, scopes: [] }
        : undefined;
    },
    audienceOf: (request) => request.tenant.id,
    limits,
  };
}

const tenantNotAllowed = () => new AppError(ErrorCode.TENANT_NOT_ALLOWED);

export async function refuseTenantInRequest(request: FastifyRequest) {
  const query = request.query as Record<string, unknown> | undefined;
  const body = request.body;
  const bodyKeys = body && typeof body === 'object' && !Array.isArray(body) ? Object.keys(body) : [];
  if ([...Object.keys(query ?? {}), ...bodyKeys].some((key) => TENANT_FIELDS.has(key.toLowerCase()))) {
    throw tenantNotAllowed();
  }
}

/** For an unknown `/api/v1/` path: refuse it if a segment names a tenant, the caller's own included. */
export async function refuseTenantInPath(
  authentication: TenantAuthentication,
  request: FastifyRequest,
  reply: FastifyReply,
) {
  const { tenant } = await tenantOf(authentication, request, reply);
  const segments = request.url
    .split('?')[0]
    .split('/')
    .map((segment) => {
      try {
        return decodeURIComponent(segment).toLowerCase();
      } catch {
        return segment.toLowerCase();
      }
    });
  if (segments.some((segment) => TENANT_FIELDS.has(segment) || segment === tenant.slug || segment === tenant.id)) {
    throw tenantNotAllowed();
  }
}
