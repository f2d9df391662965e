// JSON log lines; secrets and key headers never reach them.
import { type BaseLogger, type DestinationStream, pino } from 'pino';
import pretty from 'pino-pretty';

/** What domain modules log with: any pino logger, Fastify's included. */
export type Logger = Pick<BaseLogger, 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'>;

export const REDACTED_PATHS = [
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

export function createLogger(level: string, destination?: DestinationStream) {
  return pino(
    {
      level,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}
