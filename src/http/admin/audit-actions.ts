// The audit trail's words for every change the admin host makes: each route (the admin API's and
// the console's) names its action, so one change has one name however it was made, says what its
// target is, and puts the change in a sentence ("Deactivated tenant Acme Travel"). A route not in
// this table is still recorded, under its method and route template.
import type { FieldChange, TargetType } from '../../audit/index.js';

/** What a sentence is made from: the target's name, the values that changed, the body sent. */
export interface ChangeMade {
  label: string;
  changes: FieldChange[];
  body: Record<string, unknown>;
}

export interface AuditedAction {
  target: TargetType | null;
  /** Whether the target's values are read before and after, to show what changed. */
  compare?: boolean;
  describe(change: ChangeMade): { action: string; summary: string };
}

const fixed =
  (action: string, summary: (label: string, body: Record<string, unknown>) => string) =>
  ({ label, body }: ChangeMade) => ({ action, summary: summary(label, body) });

/** `test_sso_hmac_secret` → `test SSO secret`. */
function kindWords(kind: unknown): string {
  const words: Record<string, string> = {
    sso_hmac_secret: 'SSO secret',
    partner_api_key: 'partner API key',
    test_sso_hmac_secret: 'test SSO secret',
    test_partner_api_key: 'test partner API key',
  };
  return typeof kind === 'string' ? (words[kind] ?? kind.replaceAll('_', ' ')) : 'credential';
}

/** Activation says so, whichever route or form made it; any other change is "Changed". */
function tenantChange({ label, changes, body }: ChangeMade) {
  const active = changes.find((change) => change.field === 'is_active')?.after;
  const onlyActivation = Object.keys(body).length === 1 && typeof body.is_active === 'boolean';
  const activated = typeof active === 'boolean' ? active : onlyActivation ? body.is_active : undefined;
  if (activated === true) return { action: 'tenant.activate', summary: `Activated tenant ${label}` };
  if (activated === false) return { action: 'tenant.deactivate', summary: `Deactivated tenant ${label}` };
  return { action: 'tenant.change', summary: `Changed tenant ${label}` };
}

const TENANT_CREATE: AuditedAction = {
  target: 'tenant',
  describe: fixed('tenant.create', (label) => `Created tenant ${label}`),
};
const TENANT_PING: AuditedAction = {
  target: 'tenant',
  describe: fixed('tenant.ping', (label) => `Pinged the payment endpoint of tenant ${label}`),
};
const TENANT_CHANGE: AuditedAction = { target: 'tenant', compare: true, describe: tenantChange };
const CREDENTIAL_ISSUE: AuditedAction = {
  target: 'tenant',
  describe: fixed('credential.issue', (label, body) => `Issued a ${kindWords(body.kind)} for tenant ${label}`),
};
const CREDENTIAL_REVOKE: AuditedAction = {
  target: 'credential',
  describe: fixed('credential.revoke', (label) => `Revoked credential ${label}`),
};
const PARTNER_KEY_CREATE: AuditedAction = {
  target: 'partner_key',
  describe: fixed('partner_key.create', (label) => `Created partner key ${label}`),
};
const PARTNER_KEY_REVOKE: AuditedAction = {
  target: 'partner_key',
  describe: fixed('partner_key.revoke', (label) => `Revoked partner key ${label}`),
};
const COUNTRY_CHANGE: AuditedAction = {
  target: 'country',
  compare: true,
  describe: fixed('country.change', (label) => `Changed country ${label}`),
};
const CITY_CHANGE: AuditedAction = {
  target: 'city',
  compare: true,
  describe: fixed('city.change', (label) => `Changed city ${label}`),
};
const ATTRACTION_ADD: AuditedAction = {
  target: 'city',
  describe: fixed('attraction.create', (label, body) => `Added attraction ${String(body.name ?? '')} to city ${label}`),
};
const PROMPTS_REPLACE: AuditedAction = {
  target: 'default_prompts',
  describe: fixed('default_prompts.replace', (label) => `Replaced the default prompts in ${label}`),
};
const INVOICE_RESEND: AuditedAction = {
  target: 'invoice',
  describe: fixed('invoice.resend', (label) => `Sent the payment request of invoice ${label} again`),
};
const OPERATOR_CREATE: AuditedAction = {
  target: 'operator',
  describe: fixed('operator.create', (label, body) => `Named operator ${label} (${String(body.role ?? '')})`),
};
const OPERATOR_CHANGE: AuditedAction = {
  target: 'operator',
  compare: true,
  describe: fixed('operator.change', (label) => `Changed operator ${label}`),
};
const OPERATOR_DELETE: AuditedAction = {
  target: 'operator',
  describe: fixed('operator.delete', (label) => `Deleted operator ${label}`),
};

/** Keyed by method and route template, console routes beside the admin API's. */
export const AUDITED_ACTIONS: Record<string, AuditedAction> = {
  'POST /admin/v1/tenants': TENANT_CREATE,
  'POST /console/tenants': TENANT_CREATE,
  'PATCH /admin/v1/tenants/:id': TENANT_CHANGE,
  'POST /console/tenants/:id': TENANT_CHANGE,
  'POST /console/tenants/:id/activation': TENANT_CHANGE,
  'POST /admin/v1/tenants/:id/payment-endpoint/ping': TENANT_PING,
  'POST /console/tenants/:id/payment-endpoint/ping': TENANT_PING,
  'POST /admin/v1/tenants/:id/credentials': CREDENTIAL_ISSUE,
  'POST /console/tenants/:id/credentials': CREDENTIAL_ISSUE,
  'DELETE /admin/v1/credentials/:id': CREDENTIAL_REVOKE,
  'POST /console/credentials/:id/revoke': CREDENTIAL_REVOKE,
  'POST /admin/v1/partner-keys': PARTNER_KEY_CREATE,
  'POST /console/partner-keys': PARTNER_KEY_CREATE,
  'DELETE /admin/v1/partner-keys/:id': PARTNER_KEY_REVOKE,
  'POST /console/partner-keys/:id/revoke': PARTNER_KEY_REVOKE,
  'POST /admin/v1/countries': {
    target: 'country',
    describe: fixed('country.create', (label) => `Added country ${label}`),
  },
  'PATCH /admin/v1/countries/:id': COUNTRY_CHANGE,
  'POST /console/geo/countries/:id/supported': COUNTRY_CHANGE,
  'POST /admin/v1/cities': { target: 'city', describe: fixed('city.create', (label) => `Added city ${label}`) },
  'PATCH /admin/v1/cities/:id': CITY_CHANGE,
  'POST /console/geo/cities/:id/supported': CITY_CHANGE,
  'POST /admin/v1/cities/:id/attractions': ATTRACTION_ADD,
  'POST /console/geo/cities/:id/attractions': ATTRACTION_ADD,
  'PUT /admin/v1/default-prompts/:language': PROMPTS_REPLACE,
  'POST /console/prompts/:language': PROMPTS_REPLACE,
  'POST /admin/v1/trips': { target: 'trip', describe: fixed('trip.create', (label) => `Created trip ${label}`) },
  'POST /admin/v1/invoices': {
    target: 'invoice',
    describe: fixed('invoice.create', (label) => `Created invoice ${label}`),
  },
  'POST /admin/v1/invoices/:id/payment-requests': INVOICE_RESEND,
  'POST /console/invoices/:id/payment-requests': INVOICE_RESEND,
  'POST /admin/v1/secrets/rekey': {
    target: null,
    describe: fixed('secrets.rekey', () => 'Sealed the signing secrets again under the current key'),
  },
  'POST /admin/v1/operators': OPERATOR_CREATE,
  'POST /console/operators': OPERATOR_CREATE,
  'PATCH /admin/v1/operators/:id': OPERATOR_CHANGE,
  'POST /console/operators/:id': OPERATOR_CHANGE,
  'DELETE /admin/v1/operators/:id': OPERATOR_DELETE,
  'POST /console/operators/:id/delete': OPERATOR_DELETE,
  'POST /admin/v1/backups': { target: null, describe: fixed('backup.create', () => 'Took a backup') },
  'POST /admin/v1/prunes': {
    target: null,
    describe: fixed('retention.prune', () => 'Pruned what is past its retention'),
  },
  'POST /console/sign-in': { target: null, describe: fixed('console.sign_in', () => 'Signed in to the console') },
  'POST /console/sign-out': {
    target: null,
    describe: fixed('console.sign_out', () => 'Signed out of the console'),
  },
};

/** The name of a failed sign-in to the console, recorded by the sign-in route itself. */
export const FAILED_SIGN_IN = 'console.sign_in_failed';
