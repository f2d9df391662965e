// Rules for text received from outside, shared by the domains and the hosts.
import type { FieldError } from './errors.js';

/** A UUID in any case, as text a schema pattern can embed. */
export const UUID_PATTERN_SOURCE = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';
const UUID = new RegExp(`^${UUID_PATTERN_SOURCE}$`);

export function isUuid(text: string): boolean {
  return UUID.test(text);
}

// NUL cannot be stored in PostgreSQL text, and a lone surrogate is not text at all: the driver
// would store U+FFFD for it, so two different strings could be stored as one.
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is exactly what this finds.
const UNSTORABLE = /[\u0000\p{Cs}]/u;
const EVERY_UNSTORABLE = new RegExp(UNSTORABLE.source, 'gu');

/** Whether the text holds NUL or an unpaired surrogate. */
export function hasUnstorableCharacters(text: string): boolean {
  return UNSTORABLE.test(text);
}

/**
 * The longest string any request may carry, in a body or a query: fields with a limit of their own
 * say less. Nothing the service stores is longer, and an unbounded string could exceed what an
 * index can hold.
 */
const MAX_STRING_CHARACTERS = 4096;

/**
 * The first string (value or key) that no field accepts: NUL, an unpaired surrogate, or longer
 * than `maxCharacters` (MAX_STRING_CHARACTERS unless a caller stores what it is given whole).
 * Checked once here so that no route, present or future, hands such a string to the database.
 */
export function unacceptableString(
  value: unknown,
  location: FieldError['location'],
  maxCharacters = MAX_STRING_CHARACTERS,
  path: string[] = [],
): FieldError | null {
  if (typeof value === 'string') {
    const field = path.join('.') || '(root)';
    if (hasUnstorableCharacters(value)) {
      return { field, message: 'must not contain NUL characters or unpaired surrogates', location };
    }
    if (value.length > maxCharacters) {
      return { field, message: `must be at most ${maxCharacters} characters`, location };
    }
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  for (const [key, item] of Object.entries(value)) {
    const keyProblem = unacceptableString(key, location, maxCharacters, [...path, '(key)']);
    if (keyProblem) return { ...keyProblem, field: [...path, key.slice(0, 64)].join('.') };
    const problem = unacceptableString(item, location, maxCharacters, [...path, key]);
    if (problem) return problem;
  }
  return null;
}

// Bidirectional controls (embeddings, overrides, isolates, marks) make text display other than it
// reads: `abc\u202Egnp.exe` shows as "abcexe.png".
const BIDI_CONTROL = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/u;
// Characters that show nothing: format characters (U+200B, U+2064, U+00AD, U+180E, the tags of
// U+E0000...) and those Unicode says to ignore (Hangul fillers U+115F, U+1160, U+3164). Two stay:
// the joiners Arabic and Indic scripts need (ZWNJ U+200C, ZWJ U+200D). Variation selectors stay too:
// they pick a glyph for the character before them (emoji, CJK).
const INVISIBLE = /(?!\u200C|\u200D|\p{Variation_Selector})[\p{Cf}\p{Default_Ignorable_Code_Point}]/u;
// Something a reader sees: a letter, digit, punctuation or symbol (not only spaces, combining marks
// or the braille blank U+2800, a symbol with no dots).
const VISIBLE = /(?!\u2800)[\p{L}\p{N}\p{P}\p{S}]/u;
/** More combining marks on one character than any script needs ("Zalgo" text). */
const COMBINING_RUN = /\p{M}{5,}/u;

/** What makes display text (shown to travellers) unfit, or null. */
export function displayTextProblem(text: string): string | null {
  if (hasUnstorableCharacters(text)) return 'must not contain NUL characters or unpaired surrogates';
  if (BIDI_CONTROL.test(text)) return 'must not contain bidirectional control characters';
  if (INVISIBLE.test(text)) return 'must not contain invisible or format characters (other than ZWJ and ZWNJ)';
  if (!VISIBLE.test(text)) return 'must contain a visible character';
  if (COMBINING_RUN.test(text)) return 'must not stack more than 4 combining marks on a character';
  return null;
}

/** An ILIKE pattern matching any text that contains `fragment` literally (`%`, `_`, `\` escaped). */
export function containsPattern(fragment: string): string {
  return `%${fragment.replace(/[\\%_]/g, (char) => `\\${char}`)}%`;
}

/**
 * The start of `text`, at most `maxBytes` of UTF-8, storable as PostgreSQL text: NUL and unpaired
 * surrogates become U+FFFD, and a character cut in two at the end is dropped rather than shown.
 */
export function storableStart(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8');
  const start =
    bytes.length <= maxBytes
      ? text
      : bytes
          .subarray(0, maxBytes)
          .toString('utf8')
          .replace(/\uFFFD$/, '');
  return start.replace(EVERY_UNSTORABLE, '\uFFFD');
}
