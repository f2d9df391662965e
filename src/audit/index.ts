// Operators' changes: what the rest of the service may use of this domain.
export {
  type AuditEventInput,
  type AuditEventRow,
  auditEventRecord,
  insertAuditEvent,
  listAuditActions,
  listAuditEvents,
  recordAuditEvent,
} from './events.js';
export {
  type AuditValue,
  changedFields,
  type FieldChange,
  redactedUrl,
  TARGET_TYPES,
  type TargetType,
  targetLabel,
  targetValues,
} from './targets.js';
