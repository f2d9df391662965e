// Query strings are held to the same rules as bodies (src/text.ts), before any route sees them.
import { invalid } from '../../errors.js';
import { unacceptableString } from '../../text.js';
import type { HostApp } from './host-app.js';

export function refuseUnacceptableQueryText(app: HostApp): void {
  app.addHook('preValidation', (request, _reply, done) => {
    const problem = unacceptableString(request.query, 'query');
    done(problem ? invalid([problem]) : undefined);
  });
}
