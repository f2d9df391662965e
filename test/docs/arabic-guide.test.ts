// docs/ar/partners.md keeps in step with docs/partners.md: the same sections, numbered alike, the
// same code samples character for character and in the same order, the same pictures (but those
// of the Arabic guide itself, in the English one only); and its prose is Arabic, not English left
// untranslated.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { arabicPartnerGuideFile, partnerGuideFile } from '../../src/paths.js';

const english = readFileSync(partnerGuideFile, 'utf8');
const arabic = readFileSync(arabicPartnerGuideFile, 'utf8');

const CODE = /^```[^\n]*\n[\s\S]*?^```$/gm;
const codeSamples = (guide: string) => guide.match(CODE) ?? [];
const prose = (guide: string) => guide.replace(CODE, '');

/** Each heading's level and its section number (`## 4. …` → `2 4`), in order. */
const outline = (guide: string) =>
  [...prose(guide).matchAll(/^(#{1,6}) (\d+\.)?/gm)].map((match) => `${match[1]!.length} ${match[2] ?? ''}`.trim());

/** The files a guide's pictures point at. */
const pictures = (file: string, guide: string) =>
  [...guide.matchAll(/!\[[^\]]*\]\(([^)]+)\)/g)].map((match) => path.resolve(path.dirname(file), match[1]!));

describe('the Arabic partner guide', () => {
  it('has the English guide’s sections, at the same levels and numbers', () => {
    expect(outline(english).length).toBeGreaterThan(10);
    expect(outline(arabic)).toEqual(outline(english));
  });

  it('has the same code samples, unchanged and in the same order', () => {
    expect(codeSamples(english).length).toBeGreaterThan(10);
    expect(codeSamples(arabic)).toEqual(codeSamples(english));
  });

  it('shows the same pictures, but for the English guide’s pictures of the Arabic one', () => {
    const ofTheArabicGuide = (file: string) => path.basename(file).startsWith('guide-ar-');
    const englishPictures = pictures(partnerGuideFile, english);
    expect(englishPictures.filter(ofTheArabicGuide)).toHaveLength(2);
    expect(pictures(arabicPartnerGuideFile, arabic)).toEqual(englishPictures.filter((file) => !ofTheArabicGuide(file)));
  });

  it('is written in Arabic: most letters of every section’s prose are Arabic', () => {
    const sections = prose(arabic)
      .replace(/`[^`\n]*`/g, '')
      .split(/^#{1,6} /m);
    for (const section of sections.filter((text) => text.trim())) {
      const arabicLetters = section.match(/\p{Script=Arabic}/gu)?.length ?? 0;
      const latinLetters = section.match(/\p{Script=Latin}/gu)?.length ?? 0;
      expect(arabicLetters / (arabicLetters + latinLetters), section.slice(0, 60)).toBeGreaterThan(0.6);
    }
  });
});
