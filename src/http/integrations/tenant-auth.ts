// The tenant of an `/api/v1/` request comes from its credential, once, and nowhere else:
// a tenant named in the path, query or body is refused (spec §1 rule 2).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { AppError, ErrorCode } from '../../errors.js';
import { type Mode, resolveSsoSecret, type TenantCredential, type TenantRow } from '../../tenants/index.js';
import { apiKeyFromAuthorization } from '../api-key.js';
import { type Authenticator, authenticator, type CredentialCheck } from '../authentication.js';
import { credentialHint } from '../credential-hints.js';
import type { RateLimitGuard } from '../rate-limit.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated tenant; set on every `/api/v1/` resource request. */
    tenant: TenantRow;
    /** The mode of its credential: a test secret sees and changes only test payment data. */
    mode: Mode;
    /** The SSO secret's id. */
    credentialId: string;
  }
}

/** Whose objects a request may see and change: its credential's tenant, in its credential's mode. */
export const credentialScope = (request: FastifyRequest) => ({ tenantId: request.tenant.id, mode: request.mode });

const TENANT_FIELDS = new Set(['tenant', 'tenant_id', 'tenant_slug', 'tenants']);

/** The tenant of an `/api/v1/` request, from its SSO secret. */
const tenantCheck = ({ db, caches }: AppContext): CredentialCheck<TenantCredential> => ({
  lookUp: (request) => resolveSsoSecret(db, caches, apiKeyFromAuthorization(request.headers.authorization)),
  rateLimitKey: (credential) => credential.credentialId,
  // A tenant's answers are its own, and a test secret's are apart from a live one's.
  audienceOf: (credential) => `${credential.tenant.id}:${credential.mode}`,
  refusal(request, reply) {
    reply.header('www-authenticate', 'Api-Key');
    return new AppError(ErrorCode.UNAUTHORIZED, undefined, undefined, credentialHint('resources', request.headers));
  },
  accept(request, { tenant, mode, credentialId }) {
    request.tenant = tenant;
    request.mode = mode;
    request.credentialId = credentialId;
    return undefined;
  },
});

/** The integrations host's authenticator of SSO secrets, under its rate limits. */
export const authenticateTenant = (context: AppContext, limits: RateLimitGuard) =>
  authenticator(limits, tenantCheck(context));

const tenantNotAllowed = () => new AppError(ErrorCode.TENANT_NOT_ALLOWED);

export async function refuseTenantInRequest(request: FastifyRequest) {
  const query = request.query as Record<string, unknown> | undefined;
  const body = request.body;
  const bodyKeys = body && typeof body === 'object' && !Array.isArray(body) ? Object.keys(body) : [];
  // `tenant[]` and `tenant[id]` name a tenant too, as some query parsers read them.
  const named = (key: string) => TENANT_FIELDS.has(key.toLowerCase().replace(/\[.*$/, ''));
  if ([...Object.keys(query ?? {}), ...bodyKeys].some(named)) {
    throw tenantNotAllowed();
  }
}

/** For an unknown `/api/v1/` path: refuse it if a segment names a tenant, the caller's own included. */
export async function refuseTenantInPath(authenticate: Authenticator, request: FastifyRequest, reply: FastifyReply) {
  await authenticate(request, reply);
  const { tenant } = request;
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
