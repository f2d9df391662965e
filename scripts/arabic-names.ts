// Which GeoNames alternate name is a city's Arabic name (see arabicName below). Shared by
// prepare-reference-data.ts and the coverage test.

// Letters of the Arabic alphabet proper (hamza … ghain, feh … yeh), as opposed to the letters that
// Persian, Urdu, Pashto, Kurdish and Uyghur add (پ چ ژ گ ک ی ے ە …). Words are joined by a space or
// a hyphen; vowel marks (harakat) are removed before the test.
const ARABIC_ALPHABET_NAME = /^[\u0621-\u063A\u0641-\u064A]+(?:[ -][\u0621-\u063A\u0641-\u064A]+)*$/u;
// Persian "shahr" (city) before or after the name: "شهر باناما", "رنغبور شهر".
const PERSIAN_CITY_WORD = /^شهر | شهر$/u;
const HARAKAT = /[\u064B-\u0652]/gu;
// Arabic writes alef maqsura and teh marbuta only at the end of a word, never starts one with a
// yeh-hamza carrier, and never doubles alef or heh: those are Uyghur and Kurdish spellings.
const NOT_ARABIC_ORTHOGRAPHY = /[\u0649\u0629](?=[\u0621-\u064A])|(?:^|[ -])\u0626|\u0627\u0627|\u0647\u0647/u;
// Letters that Persian and Urdu spell differently (ک ی, ه for ة), so they mark an Arabic spelling.
const ARABIC_SPELLING_LETTER = /[\u0629\u0643\u064A]|\u0649(?![\u0621-\u064A])/u;
const HAMZA_ALEF = /[\u0623\u0625]/gu;
const FINAL_YEH = /\u064A(?![\u0621-\u064A])/gu;
const DEFINITE_ARTICLE = 'ال';
// "city of X", "governorate of X", "province of X", "emirate of X", "district of X" (Libya).
const PLACE_QUALIFIERS = ['مدينة ', 'محافظة ', 'ولاية ', 'إمارة ', 'شعبية '].map(spellingKey);

/**
 * The Arabic name of a city derived from its GeoNames alternate names, or null when none is
 * reliable. cities500 has no language tags, and most Arabic-script alternate names are Persian,
 * Urdu, Pashto, Kurdish or Uyghur spellings, so:
 * 1. candidates are the names written only with letters of the Arabic alphabet (after removing
 *    vowel marks) in Arabic orthography (no ى or ة inside a word, no word starting with ئ, no اا or
 *    هه), and not carrying the Persian word "شهر" (city) before or after the name;
 * 2. spellings that differ only in hamza on alef (أ إ آ/ا) or in final ى/ي are one candidate, kept in
 *    the standard spelling (the one with most hamza-on-alef and final ي);
 * 3. "X" beside "الX" is one candidate (الX: Arabic keeps the article, Persian drops it), and
 *    "مدينة X", "محافظة X", … beside "X" is one candidate (X, the place itself);
 * 4. when some candidates contain a letter that only the Arabic spelling uses (ة ك ي, final ى), the
 *    others are dropped;
 * 5. a candidate that is another alternate name's Persian, Urdu or Kurdish spelling written with
 *    Arabic letters (ی ک ہ ھ ە mapped to ي ك ه) is dropped: that is how those languages write it;
 * 6. of what is left, the first in GeoNames' order;
 * 7. with no candidate at all, a Persian, Urdu, Kurdish or Ottoman spelling transliterated letter by
 *    letter the way Arabic writers render those letters (پ ب, چ تش, ژ ج, گ غ, ی ي, ک ك, ہ ه, ...),
 *    when the result is written in the Arabic alphabet alone; else null. The
 *    reviewed overrides (arabic-name-overrides.tsv) come before all of this for the destinations
 *    travellers book most, and wherever this rule is known to choose badly.
 */
export function arabicName(alternateNames: readonly string[], name: string): string | null {
  // "Shahr" is part of some names themselves (Zarghūn Shahr), not the Persian word added to them.
  const cityWord = /sha(k?)hr/i.test(name) ? null : PERSIAN_CITY_WORD;
  const spellingByKey = new Map<string, string>();
  for (const alternateName of alternateNames) {
    const spelling = alternateName.trim().replace(HARAKAT, '');
    if (!ARABIC_ALPHABET_NAME.test(spelling) || NOT_ARABIC_ORTHOGRAPHY.test(spelling) || cityWord?.test(spelling)) {
      continue;
    }
    const key = spellingKey(spelling);
    const kept = spellingByKey.get(key);
    if (kept === undefined || standardSpellingScore(spelling) > standardSpellingScore(kept)) {
      spellingByKey.set(key, spelling);
    }
  }
  const keys = [...spellingByKey.keys()].filter(
    (key) =>
      !spellingByKey.has(DEFINITE_ARTICLE + key) &&
      !PLACE_QUALIFIERS.some(
        (qualifier) => key.startsWith(qualifier) && spellingByKey.has(key.slice(qualifier.length)),
      ),
  );
  const names = keys.map((key) => spellingByKey.get(key)!);
  const arabicSpelled = names.filter((name) => ARABIC_SPELLING_LETTER.test(name));
  const candidates = arabicSpelled.length > 0 ? arabicSpelled : names;
  const otherScripts = new Set(
    alternateNames
      .map((name) => name.trim().replace(HARAKAT, ''))
      .filter((name) => !ARABIC_ALPHABET_NAME.test(name) && /\p{Script=Arabic}/u.test(name))
      .map((name) => spellingKey(inArabicLetters(name))),
  );
  const arabic = candidates.filter((name) => !otherScripts.has(spellingKey(name)));
  return (arabic.length > 0 ? arabic : candidates)[0] ?? transliterated(alternateNames, cityWord);
}

/** Step 7: the first other-script spelling that transliterates into the Arabic alphabet alone. */
function transliterated(alternateNames: readonly string[], cityWord: RegExp | null): string | null {
  for (const alternateName of alternateNames) {
    const name = alternateName.trim().replace(HARAKAT, '');
    if (!/\p{Script=Arabic}/u.test(name)) continue;
    const arabic = inArabicLetters(name)
      .replace(/\u067E/gu, '\u0628') // پ → ب
      .replace(/\u0686/gu, '\u062A\u0634') // چ → تش
      .replace(/\u0698/gu, '\u062C') // ژ → ج
      .replace(/\u06AF/gu, '\u063A') // گ → غ
      .replace(/\u06A4/gu, '\u0641') // ڤ → ف
      .replace(/\u0679/gu, '\u062A') // ٹ → ت
      .replace(/\u0688/gu, '\u062F') // ڈ → د
      .replace(/\u0691/gu, '\u0631') // ڑ → ر
      .replace(/\u06BA/gu, '\u0646') // ں → ن
      .replace(/[\u06C6\u06C7\u06C8\u06C9]/gu, '\u0648') // ۆ ۇ ۈ ۉ → و
      .replace(/[\u06CE\u0649](?=[\u0621-\u064A])/gu, '\u064A') // ێ, ى inside a word → ي
      .replace(/\u0626(?=[\u0627\u0648\u064A\u0647])/gu, '') // Kurdish/Uyghur vowel carrier
      .replace(/\u200C/gu, ' ')
      .replace(/ +/g, ' ')
      .trim();
    if (ARABIC_ALPHABET_NAME.test(arabic) && !NOT_ARABIC_ORTHOGRAPHY.test(arabic) && !cityWord?.test(arabic)) {
      return arabic;
    }
  }
  return null;
}

/** Persian, Urdu and Kurdish letters as the Arabic letters they stand for. */
function inArabicLetters(name: string): string {
  return name
    .replace(/[\u06CC\u06D2\u06D0]/gu, '\u064A') // ی ے ې → ي
    .replace(/\u06A9/gu, '\u0643') // ک → ك
    .replace(/[\u06C1\u06BE\u06D5]/gu, '\u0647') // ہ ھ ە → ه
    .replace(/\u06C0/gu, '\u0629'); // ۀ → ة
}

function spellingKey(name: string): string {
  return name.replace(/[\u0622\u0623\u0625]/gu, '\u0627').replace(/\u0649(?![\u0621-\u064A])/gu, '\u064A');
}

function standardSpellingScore(name: string): number {
  return (name.match(HAMZA_ALEF)?.length ?? 0) + (name.match(FINAL_YEH)?.length ?? 0);
}
