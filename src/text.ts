// Rules for text received from outside, shared by the domains and the hosts.

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

// Bidirectional controls (embeddings, overrides, isolates, marks) make text display other than it
// reads: `abc\u202Egnp.exe` shows as "abcexe.png".
const BIDI_CONTROL = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/u;
// Something a reader sees: a letter, digit, punctuation or symbol (not only spaces, format
// characters such as U+200B, or combining marks).
const VISIBLE = /[\p{L}\p{N}\p{P}\p{S}]/u;
/** More combining marks on one character than any script needs ("Zalgo" text). */
const COMBINING_RUN = /\p{M}{5,}/u;

/** What makes display text (shown to travellers) unfit, or null. */
export function displayTextProblem(text: string): string | null {
  if (hasUnstorableCharacters(text)) return 'must not contain NUL characters or unpaired surrogates';
  if (BIDI_CONTROL.test(text)) return 'must not contain bidirectional control characters';
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
