// Tenants and their credentials: what the rest of the service may use of this domain.
export {
  BACKEND_SCOPES,
  type BackendPartner,
  type BackendScope,
  type CredentialWithUse,
  countUnopenableSecrets,
  issueCredential,
  issuePartnerKey,
  keysOfSealedSecrets,
  listCredentials,
  resealSecrets,
  resolveBackendPartnerKey,
  resolvePartnerApiKey,
  resolveSsoSecret,
  revokeCredential,
  sealedPaymentEndpointSecrets,
  type TenantCredential,
} from './credentials.js';
export {
  endPortalSession,
  findPortalSession,
  issuePortalLink,
  openPortalSession,
  PORTAL_ACCESS,
  PORTAL_LANGUAGES,
  PORTAL_LINK_MINUTES,
  PORTAL_SESSION_HOURS,
  type PortalAccess,
  type PortalLanguage,
  type PortalLinkRequest,
  type PortalSession,
} from './portal.js';
export { keyFilePath, type SecretBox, secretBoxFor } from './secret-box.js';
export {
  kindByPrefix,
  MODES,
  type Mode,
  prefixOf,
  secretHint,
  TENANT_CREDENTIAL_KINDS,
  type TenantCredentialKind,
} from './secrets.js';
export {
  countActiveTenants,
  createTenant,
  getTenant,
  listTenants,
  paymentEndpointIn,
  slugTaken,
  type TenantRow,
  updateTenant,
} from './tenants.js';
