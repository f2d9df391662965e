// A partner's payload as the pages show it.
import { stringify } from 'lossless-json';
import { storedJson } from '../json-body.js';

/**
 * A payload as received, indented, every number's digits as sent; as stored when too deep to
 * indent, or when not JSON (a refused notification's body, cut short).
 */
export function prettyPayload(payloadJson: string): string {
  try {
    const payload = storedJson(payloadJson);
    return typeof payload === 'string' ? payloadJson : (stringify(payload, null, 2) ?? payloadJson);
  } catch {
    return payloadJson;
  }
}
