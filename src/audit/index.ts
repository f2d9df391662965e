// Operators' changes: what the rest of the service may use of this domain.
export {
  type AuditEventInput,
  type AuditEventRow,
  listAuditActions,
  listAuditEvents,
  recordAuditEvent,
} from './events.js';
