// JSON log lines; secrets and key headers never reach them.
import { type BaseLogger, type DestinationStream, pino, stdSerializers } from 'pino';
import pretty from 'pino-pretty';
import { activeSpanIds, tracingConfigured } from './tracing.js';

/** What domain modules log with: any pino logger, Fastify's included. */
export type Logger = Pick<BaseLogger, 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'>;

const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  '*.secret',
  '*.key',
  '*.password',
  '*.sso_hmac_secret',
  '*.partner_api_key',
  '*.payment_endpoint_secret',
];

/**
 * One readable, coloured line per event for people (LOG_FORMAT=pretty): a request reads
 * `INFO: [integrations] GET /api/v1/cities/ 200 3.1ms`. Written synchronously, in this process.
 */
export function prettyDestination(colorize: boolean, destination: NodeJS.WritableStream = process.stdout) {
  return pretty({
    colorize,
    destination,
    sync: true,
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,listener,method,url,status,ms',
    messageFormat: (log, messageKey) => {
      const where = log.listener ? `[${log.listener}] ` : '';
      const request = log.method ? `${log.method} ${log.url} ${log.status} ${log.ms}ms ` : '';
      return `${where}${request}${request && log[messageKey] === 'request completed' ? '' : log[messageKey]}`;
    },
  });
}

// What an error may carry that must never reach a log: the raw request bytes of a client error
// (headers with keys in full), and a database driver's statement and parameters (a whole payment
// notification, card data in an extra field included).
const ERROR_FIELDS_NEVER_LOGGED = new Set(['rawPacket', 'query', 'parameters', 'params', 'values', 'args']);

/** Drizzle's query errors spell the parameters out in their message (and so their stack) too. */
const PARAMETERS_IN_MESSAGE = /\nparams: [\s\S]*?(?=\n {4}at |$)/;

/** pino's error serializer without those fields, on the error and every error in its cause chain. */
function serializeError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const serialized = stdSerializers.err(error) as unknown as Record<string, unknown>;
  for (const field of ERROR_FIELDS_NEVER_LOGGED) delete serialized[field];
  for (const field of ['message', 'stack']) {
    if (typeof serialized[field] === 'string') serialized[field] = serialized[field].replace(PARAMETERS_IN_MESSAGE, '');
  }
  if (error.cause !== undefined) serialized.cause = serializeError(error.cause);
  return serialized;
}

/**
 * A URL as logged: the values of query parameters that look like credentials are replaced, and so
 * is anything shaped like one of our keys or secrets wherever it is (a key pasted into a path or
 * under another parameter's name), percent-encoded or not.
 */
export function loggableUrl(url: string): string {
  const query = url.indexOf('?');
  const path = url.replace(OUR_CREDENTIAL, '[redacted]');
  if (query === -1) return path;
  const pathEnd = path.indexOf('?');
  return path.slice(0, pathEnd) + path.slice(pathEnd).replace(CREDENTIAL_PARAMETER, '$1[redacted]');
}
const CREDENTIAL_PARAMETER =
  /([?&][^=&]*(?:key|token|secret|password|passwd|auth|signature|sig|session|credential)[^=&]*=)[^&#]*/gi;
/**
 * Our keys (`pis_<kind>_` and what follows, to a separator) and signing secrets (`whsec_` and its
 * base64, whose alphabet holds `/`, `+` and `=`, percent-encoded or not).
 */
const OUR_CREDENTIAL = /(?<![a-z0-9])(?:pis(?:_|%5f)[^/?&#=;,\s]*|whsec(?:_|%5f)[a-z0-9+/=%]*)/gi;

/** A URL with its password masked, for messages: `postgres://app:***@db/app`. */
export function maskPassword(text: string): string {
  return text.replace(/(\/\/[^/:@\s]*:)[^@/\s]*@/g, '$1***@');
}

export function createLogger(level: string, destination?: DestinationStream) {
  return pino(
    {
      level,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      serializers: { err: serializeError, error: serializeError },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      // With tracing on, each line names the span it was written in; off, no mixin runs.
      ...(tracingConfigured() ? { mixin: activeSpanIds } : {}),
    },
    destination,
  );
}
