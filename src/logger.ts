// JSON log lines; secrets and key headers never reach them.
import { type BaseLogger, type DestinationStream, pino } from 'pino';

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
