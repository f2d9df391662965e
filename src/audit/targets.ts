// What an audit event is about, in words: the target's name as it reads when the change is made,
// and the values an operator may see of it before and after (never a secret: an endpoint URL
// loses its user, password and query, which may carry one).
import { eq } from 'drizzle-orm';
import type { Executor } from '../db/client.js';
import { cities, countries, credentials, invoices, operators, tenants, trips } from '../db/schema.js';
import { isUuid } from '../text.js';

export const TARGET_TYPES = [
  'tenant',
  'credential',
  'partner_key',
  'country',
  'city',
  'trip',
  'invoice',
  'operator',
  'default_prompts',
] as const;
export type TargetType = (typeof TARGET_TYPES)[number];

export type AuditValue = string | boolean | null;

/** One field's value before and after a change. */
export interface FieldChange {
  field: string;
  before: AuditValue;
  after: AuditValue;
}

/** `https://pay.example/requests` of `https://user:pass@pay.example/requests?token=x`: enough to tell them apart. */
export function redactedUrl(url: string | null): string | null {
  if (url === null) return null;
  try {
    const parsed = new URL(url);
    const hidden = parsed.username || parsed.password ? '***@' : '';
    return `${parsed.protocol}//${hidden}${parsed.host}${parsed.pathname}${parsed.search ? '?…' : ''}`;
  } catch {
    return '(not a URL)';
  }
}

/** The name the audit trail gives the target now; null when it does not exist. */
export async function targetLabel(db: Executor, type: TargetType, id: string): Promise<string | null> {
  if (type !== 'default_prompts' && !isUuid(id)) return null;
  switch (type) {
    case 'tenant':
      return (await db.select({ label: tenants.name }).from(tenants).where(eq(tenants.id, id)))[0]?.label ?? null;
    case 'credential': {
      const [found] = await db
        .select({ hint: credentials.hint, tenant: tenants.name })
        .from(credentials)
        .leftJoin(tenants, eq(tenants.id, credentials.tenantId))
        .where(eq(credentials.id, id));
      return found ? `${found.hint}${found.tenant ? ` of ${found.tenant}` : ''}` : null;
    }
    case 'partner_key': {
      const [found] = await db
        .select({ name: credentials.name, hint: credentials.hint })
        .from(credentials)
        .where(eq(credentials.id, id));
      return found ? (found.name ?? found.hint) : null;
    }
    case 'country':
      return (await db.select({ label: countries.name }).from(countries).where(eq(countries.id, id)))[0]?.label ?? null;
    case 'city':
      return (await db.select({ label: cities.name }).from(cities).where(eq(cities.id, id)))[0]?.label ?? null;
    case 'trip':
      return (await db.select({ label: trips.title }).from(trips).where(eq(trips.id, id)))[0]?.label ?? null;
    case 'invoice': {
      const [found] = await db
        .select({ amount: invoices.amount, currency: invoices.currency })
        .from(invoices)
        .where(eq(invoices.id, id));
      return found ? `${id.slice(0, 8)} (${found.amount} ${found.currency})` : null;
    }
    case 'operator':
      return (await db.select({ label: operators.name }).from(operators).where(eq(operators.id, id)))[0]?.label ?? null;
    case 'default_prompts':
      return id;
  }
}

/** The values of the target an operator may see, for the targets whose changes are compared. */
export async function targetValues(
  db: Executor,
  type: TargetType,
  id: string,
): Promise<Record<string, AuditValue> | null> {
  if (!isUuid(id)) return null;
  switch (type) {
    case 'tenant': {
      const [row] = await db.select().from(tenants).where(eq(tenants.id, id));
      return row
        ? {
            name: row.name,
            gateway: row.gateway,
            is_active: row.isActive,
            payment_endpoint_url: redactedUrl(row.paymentEndpointUrl),
            test_payment_endpoint_url: redactedUrl(row.testPaymentEndpointUrl),
          }
        : null;
    }
    case 'operator': {
      const [row] = await db.select().from(operators).where(eq(operators.id, id));
      return row ? { name: row.name, role: row.role } : null;
    }
    case 'country': {
      const [row] = await db.select().from(countries).where(eq(countries.id, id));
      return row ? { name: row.name, phone_code: row.phoneCode, supported: row.supported } : null;
    }
    case 'city': {
      const [row] = await db.select().from(cities).where(eq(cities.id, id));
      return row ? { name: row.name, capital: row.capital, supported: row.supported } : null;
    }
    default:
      return null;
  }
}

/** The fields whose value differs, in `after`'s order. */
export function changedFields(
  before: Record<string, AuditValue> | null,
  after: Record<string, AuditValue> | null,
): FieldChange[] {
  if (!before || !after) return [];
  return Object.keys(after)
    .filter((field) => before[field] !== after[field])
    .map((field) => ({ field, before: before[field] ?? null, after: after[field] }));
}
