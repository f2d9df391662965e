// Invoices, the payment callback and the outbound payment request: what the rest of the service may use of this domain.
export { ATTEMPT_OUTCOMES, hourlyPaymentActivity, NOTIFICATION_OUTCOMES } from './activity.js';
export { CALLBACK_REFUSALS, type CallbackResult, plannedMoves, processNotification } from './callback.js';
export { type BreakerEventRow, type BreakerRow, endpointBreaker, failingEndpoints } from './delivery/breaker.js';
export {
  type AttemptReport,
  type AttemptResult,
  type DeliveryDependencies,
  deliver,
  paymentContext,
  paymentMessageId,
  RESPONSE_BODY_MAX_BYTES,
} from './delivery/deliver.js';
export { PaymentRequests, type RecordedAttempt } from './delivery/requests.js';
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from './delivery/retry.js';
export { isSuccessStatus, REQUEST_TIMEOUT_MS, type SigningDependencies } from './delivery/send.js';
export { PaymentWorker } from './delivery/worker.js';
export {
  CREATE_INVOICE,
  createInvoice,
  getInvoice,
  IDEMPOTENCY_WINDOW_HOURS,
  INACTIVE_TENANT,
  type InvoiceListing,
  type InvoiceRow,
  idempotencyKeyReused,
  invoiceHistory,
  listDeliveries,
  listInvoices,
  listPaymentEvents,
  outcomeAlreadyReported,
  type PaymentDeliveryRow,
  type PaymentEventRow,
  possibleDoubleCharges,
  resendPaymentRequest,
  searchInvoices,
} from './invoices.js';
export {
  BODY_REFUSALS,
  INVOICE_STATUSES,
  type InvoiceStatus,
  NOT_APPLIED_NOTES,
  NOT_APPLIED_REASONS,
  type NotAppliedReason,
  NotificationBody,
  namedInvoiceId,
  notificationBodyRefusal,
  parseNotification,
  readNotification,
  storedNotAppliedReason,
} from './notification.js';
export {
  type AcceptedNotification,
  type InvoiceLookup,
  NotificationStore,
  READ_STATEMENT,
  STORE_STATEMENT,
} from './notification-store.js';
export {
  getPaymentRequest,
  lastDeliveredAt,
  lastRequestSent,
  listNotificationLog,
  listPaymentRequests,
  NOTIFICATION_LOG_OUTCOMES,
  type NotificationLogEntry,
  type NotificationLogFilter,
  type NotificationLogOutcome,
  type PaymentRequestSummary,
  requestSent,
  type SentRequest,
  type ViewScope,
} from './partner-view.js';
export {
  type EndpointPingRow,
  lastPing,
  lastSignedAt,
  NO_TEST_ENDPOINT_TO_PING,
  NOTHING_TO_PING,
  pingPaymentEndpoint,
} from './ping.js';
export {
  listRefusedNotifications,
  REFUSALS_KEPT_PER_TENANT_MODE,
  REFUSED_PAYLOAD_MAX_BYTES,
  RefusalRecorder,
  type RefusedNotificationRow,
} from './refusals.js';
export { releasePaymentRequests } from './request-retention.js';
