// Tenants: who a partner is, which gateway it uses and where its payment endpoint lives.
import { and, asc, count, eq, ilike, or } from 'drizzle-orm';
import type { Caches } from '../cache.js';
import type { Database, Executor } from '../db/client.js';
import { isUniqueViolation } from '../db/errors.js';
import { type TenantRow, tenants } from '../db/schema.js';
import { conflict, invalidField, notFound } from '../errors.js';
import { containsPattern } from '../text.js';
import { issueCredential } from './credentials.js';
import type { Mode } from './secrets.js';

export type { TenantRow };

interface TenantRules {
  supportedGateways: string[];
}

interface NewTenant {
  name: string;
  slug: string;
  gateway: string;
  payment_endpoint_url?: string | null;
  /** Where test invoices' payment requests go. */
  test_payment_endpoint_url?: string | null;
}

type TenantChanges = Partial<
  Pick<NewTenant, 'name' | 'gateway' | 'payment_endpoint_url' | 'test_payment_endpoint_url'>
> & {
  is_active?: boolean;
};

interface IssuedTenantSecrets {
  sso_hmac_secret: string;
  partner_api_key: string;
  payment_endpoint_secret: string;
  /** Issued with a test payment endpoint: without them the endpoint gets no test invoice. */
  test_sso_hmac_secret?: string;
  test_partner_api_key?: string;
}

function checkGateway(gateway: string, rules: TenantRules): void {
  if (!rules.supportedGateways.includes(gateway)) {
    throw invalidField('gateway', `must be one of ${rules.supportedGateways.join(', ')}`);
  }
}

function checkEndpointUrl(
  endpointUrl: string | null | undefined,
  field: 'payment_endpoint_url' | 'test_payment_endpoint_url',
): void {
  if (endpointUrl == null) return;
  let url: URL;
  try {
    url = new URL(endpointUrl);
  } catch {
    throw invalidField(field, 'must be an absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw invalidField(field, 'must be an http or https URL');
  }
  if (url.username || url.password) {
    throw invalidField(field, 'must not carry credentials');
  }
}

function checkEndpointUrls(input: Pick<NewTenant, 'payment_endpoint_url' | 'test_payment_endpoint_url'>): void {
  checkEndpointUrl(input.payment_endpoint_url, 'payment_endpoint_url');
  checkEndpointUrl(input.test_payment_endpoint_url, 'test_payment_endpoint_url');
}

/** Where the tenant's payment requests and pings go in `mode`, or null when it has none. */
export function paymentEndpointIn(
  tenant: Pick<TenantRow, 'paymentEndpointUrl' | 'testPaymentEndpointUrl'>,
  mode: Mode,
): string | null {
  return mode === 'test' ? tenant.testPaymentEndpointUrl : tenant.paymentEndpointUrl;
}

export const slugTaken = (slug: string) => `A tenant with slug "${slug}" already exists.`;

/** Creates the tenant with one secret of each kind, all in one transaction. */
export async function createTenant(
  db: Database,
  input: NewTenant,
  rules: TenantRules,
  sealSecret: (secret: string) => string,
): Promise<{ tenant: TenantRow; secrets: IssuedTenantSecrets }> {
  checkGateway(input.gateway, rules);
  checkEndpointUrls(input);
  try {
    return await db.transaction(async (tx) => {
      const [tenant] = await tx
        .insert(tenants)
        .values({
          name: input.name,
          slug: input.slug,
          gateway: input.gateway,
          paymentEndpointUrl: input.payment_endpoint_url ?? null,
          testPaymentEndpointUrl: input.test_payment_endpoint_url ?? null,
        })
        .returning();
      const secrets: IssuedTenantSecrets = {
        sso_hmac_secret: (await issueCredential(tx, tenant.id, 'sso_hmac_secret', sealSecret)).secret,
        partner_api_key: (await issueCredential(tx, tenant.id, 'partner_api_key', sealSecret)).secret,
        payment_endpoint_secret: (await issueCredential(tx, tenant.id, 'payment_endpoint_secret', sealSecret)).secret,
      };
      if (tenant.testPaymentEndpointUrl !== null) {
        secrets.test_sso_hmac_secret = (
          await issueCredential(tx, tenant.id, 'test_sso_hmac_secret', sealSecret)
        ).secret;
        secrets.test_partner_api_key = (
          await issueCredential(tx, tenant.id, 'test_partner_api_key', sealSecret)
        ).secret;
      }
      return { tenant, secrets };
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict(slugTaken(input.slug));
    throw error;
  }
}

export async function getTenant(db: Executor, id: string): Promise<TenantRow> {
  const [tenant] = await db.select().from(tenants).where(eq(tenants.id, id));
  if (!tenant) throw notFound('Tenant');
  return tenant;
}

export interface TenantFilter {
  /** A piece of the name or the slug, any case. */
  search?: string;
  active?: boolean;
}

export async function listTenants(db: Executor, filter: TenantFilter = {}): Promise<TenantRow[]> {
  const pattern = filter.search && containsPattern(filter.search);
  return db
    .select()
    .from(tenants)
    .where(
      and(
        pattern ? or(ilike(tenants.name, pattern), ilike(tenants.slug, pattern)) : undefined,
        filter.active === undefined ? undefined : eq(tenants.isActive, filter.active),
      ),
    )
    .orderBy(asc(tenants.slug));
}

export async function countActiveTenants(db: Executor): Promise<number> {
  const [row] = await db.select({ count: count() }).from(tenants).where(eq(tenants.isActive, true));
  return row.count;
}

export async function updateTenant(
  db: Executor,
  caches: Caches,
  id: string,
  changes: TenantChanges,
  rules: TenantRules,
) {
  if (changes.gateway !== undefined) checkGateway(changes.gateway, rules);
  checkEndpointUrls(changes);
  const [tenant] = await db
    .update(tenants)
    .set({
      name: changes.name,
      gateway: changes.gateway,
      isActive: changes.is_active,
      paymentEndpointUrl: changes.payment_endpoint_url,
      testPaymentEndpointUrl: changes.test_payment_endpoint_url,
      updatedAt: new Date(),
    })
    .where(eq(tenants.id, id))
    .returning();
  if (!tenant) throw notFound('Tenant');
  // Cached credential answers carry the tenant (its activity, its gateway): drop them.
  caches.invalidate();
  return tenant;
}
