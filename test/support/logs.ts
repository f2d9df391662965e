// A logger whose output the test reads: each line (one JSON record) is appended to `lines`.
import { Writable } from 'node:stream';
import { createLogger } from '../../src/logger.js';

export function loggerInto(lines: string[], level: string) {
  return createLogger(
    level,
    new Writable({
      write(chunk, _encoding, done) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    }),
  );
}
