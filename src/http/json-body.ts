import { errorCodes, type FastifyInstance, type FastifyRequest } from 'fastify';
import { isSafeNumber, LosslessNumber, parse } from 'lossless-json';
import { scan } from 'secure-json-parse';
import { invalid } from '../errors.js';
import { unacceptableString } from '../text.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Parse this route's JSON body with every number as a lossless-json `LosslessNumber`, whose
     * `value` is the number's exact source text (`100.10` stays "100.10", big integers and long
     * decimals keep every digit). Other routes get plain JS numbers, exactly as from JSON.parse.
     */
    losslessJsonNumbers?: boolean;
  }
}

/**
 * `code` of the 400 error for an empty, malformed or prototype-poisoning JSON body. It is the code
 * of Fastify's own JSON parser, so an error handler maps one code whichever parser answered.
 */
export const INVALID_JSON_BODY_CODE = 'FST_ERR_CTP_INVALID_JSON_BODY';

/**
 * The deepest nesting of objects and arrays a JSON body may have. No field of ours nests beyond a
 * few levels; a partner's extra callback data gets room to spare. Deeper text is refused before it
 * is parsed: parsing and printing it again recurse once per level, and thousands of levels
 * overflow the stack.
 */
export const MAX_JSON_DEPTH = 64;

const [BACKSLASH, QUOTE, OPEN_BRACE, OPEN_BRACKET, CLOSE_BRACE, CLOSE_BRACKET] = [...'\\"{[}]'].map((character) =>
  character.charCodeAt(0),
);

/** Whether JSON `text` nests objects and arrays deeper than `limit`, read without parsing it. */
export function nestedDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === BACKSLASH) index++;
      else if (code === QUOTE) inString = false;
    } else if (code === QUOTE) inString = true;
    else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      if (++depth > limit) return true;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) depth--;
  }
  return false;
}

/**
 * A stored JSON document as shown to operators: parsed losslessly (numbers keep their digits), or
 * its text as stored when it nests deeper than a body may now (stored before the limit), which
 * could not be parsed and printed again without overflowing the stack.
 */
export function storedJson(text: string): unknown {
  return nestedDeeperThan(text, MAX_JSON_DEPTH) ? text : parse(text);
}

const STRUCTURED_JSON_MEDIA_TYPE = /^application\/[^;]+\+json(?:;|$)/;
/** Refuses what is not UTF-8 rather than replace it with U+FFFD (two byte strings read as one); drops a leading BOM. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Replaces the instance's `application/json` parser and adds `application/*+json`.
 *
 * Design: numbers are exact only where a route asks for it (`config.losslessJsonNumbers`), because
 * every other route validates bodies with TypeBox, which needs JS numbers. Both kinds of route go
 * through lossless-json, so they share one grammar: a key repeated with a different value is
 * invalid JSON rather than "last one wins", which would let two readers of a payload disagree.
 * Body size limits stay Fastify's (`bodyLimit` of the instance or route, 413 when exceeded).
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  for (const mediaType of ['application/json', STRUCTURED_JSON_MEDIA_TYPE]) {
    app.addContentTypeParser(mediaType, { parseAs: 'buffer' }, parseJsonBody);
  }
}

/** A body's text: null when it is not UTF-8 or nests deeper than MAX_JSON_DEPTH. */
function jsonText(raw: Buffer): string | null {
  let text: string;
  try {
    text = UTF8.decode(raw);
  } catch {
    return null;
  }
  return nestedDeeperThan(text, MAX_JSON_DEPTH) ? null : text;
}

function parseJsonBody(
  request: FastifyRequest,
  raw: Buffer,
  done: (error: Error | null, body?: unknown) => void,
): void {
  // No body at all, declared JSON or not (clients send the header on a DELETE too): the route's
  // schema says whether it needs one.
  if (raw.length === 0) {
    done(null, undefined);
    return;
  }
  const lossless = request.routeOptions.config.losslessJsonNumbers === true;
  // A number a JS number cannot hold exactly (`0.99999999999999999999` would be read as 1): refused,
  // as the body's other values are, without coercion. Marked where it stands, to name its field.
  let inexact: string | null = null;
  const parseNumber = lossless
    ? toLosslessNumber
    : (text: string) => {
        if (isSafeNumber(text)) return Number(text);
        inexact ??= text;
        return INEXACT;
      };
  const body = jsonText(raw);
  if (body === null) {
    done(new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY());
    return;
  }
  let value: unknown;
  try {
    value = parse(body, null, parseNumber);
    // Rejects own `__proto__` keys and `constructor.prototype`, as Fastify's default parser does.
    // One scan of the parsed value costs less than parsing the text a second time with secure-json-parse.
    if (typeof value === 'object' && value !== null) {
      scan(value, { protoAction: 'error', constructorAction: 'error' });
    }
  } catch {
    done(new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY());
    return;
  }
  if (inexact !== null) {
    const field = pathTo(value, INEXACT)?.join('.') || '(root)';
    const number = (inexact as string).slice(0, 40);
    done(invalid([{ field, message: `is ${number}, a number that cannot be read exactly`, location: 'body' }]));
    return;
  }
  // The payment callback checks its own fields, in its documented order and words (src/payments/notification.ts).
  const problem = lossless ? null : unacceptableString(value, 'body');
  if (problem) {
    done(invalid([problem]));
    return;
  }
  done(null, value);
}

/** What an inexact number is parsed as: found again (pathTo) to name its field. */
const INEXACT = Object.freeze({});

/** The keys leading to `target` in `value`, or null when it is not there. */
function pathTo(value: unknown, target: unknown): string[] | null {
  if (value === target) return [];
  if (typeof value !== 'object' || value === null) return null;
  for (const [key, item] of Object.entries(value)) {
    const rest = pathTo(item, target);
    if (rest) return [key, ...rest];
  }
  return null;
}

function toLosslessNumber(text: string): LosslessNumber {
  return new LosslessNumber(text);
}
