// Query strings are held to the same rules as bodies (src/text.ts), before any route sees them,
// and to the same percent-encoding as paths: the query parser would take `%ZZ` as it stands.
import { AppError, ErrorCode, invalid } from '../../errors.js';
import { unacceptableString } from '../../text.js';
import type { HostApp } from './host-app.js';

/** Whether the URL's query is valid percent-encoding of UTF-8 (`%ZZ` and `%FF` are not). */
function percentEncodingValid(url: string): boolean {
  const start = url.indexOf('?');
  if (start < 0) return true;
  try {
    decodeURIComponent(url.slice(start + 1));
    return true;
  } catch {
    return false;
  }
}

export function refuseUnacceptableQueryText(app: HostApp): void {
  app.addHook('preValidation', (request, _reply, done) => {
    if (!percentEncodingValid(request.url)) {
      done(new AppError(ErrorCode.MALFORMED_REQUEST));
      return;
    }
    const problem = unacceptableString(request.query, 'query');
    done(problem ? invalid([problem]) : undefined);
  });
}
