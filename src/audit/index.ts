// Operators' changes: what the rest of the service may use of this domain.
export { type AuditEventRow, listAuditActions, listAuditEvents, recordAuditEvent } from './events.js';
