// The portal's two catalogues: the same keys, every text filled, and the same `{placeholders}` in
// each language, so no page shows a key, an empty string or an unreplaced name.
import { describe, expect, it } from 'vitest';
import { chooseLanguage, localeOf } from '../../../src/http/portal/locale.js';
import { ar } from '../../../src/http/portal/messages/ar.js';
import { en } from '../../../src/http/portal/messages/en.js';

const placeholders = (text: string) => [...text.matchAll(/\{(\w+)\}/g)].map((match) => match[1]).sort();

describe('portal catalogues', () => {
  it('have the same keys in Arabic and English', () => {
    expect(Object.keys(ar).sort()).toEqual(Object.keys(en).sort());
  });

  it('fill every text, with the same placeholders in both', () => {
    for (const key of Object.keys(en) as (keyof typeof en)[]) {
      expect(en[key].trim(), key).not.toBe('');
      expect(ar[key].trim(), key).not.toBe('');
      expect(placeholders(ar[key]), key).toEqual(placeholders(en[key]));
    }
  });

  it('are Arabic in Arabic: every text has Arabic letters', () => {
    const arabic = /[\u0600-\u06ff]/;
    for (const [key, text] of Object.entries(ar)) expect(arabic.test(text), key).toBe(true);
  });
});

describe('portal locale', () => {
  it('formats amounts exactly, and dates in UTC, for the language', () => {
    // Intl puts a no-break space between the code and the number.
    expect(localeOf('en').amount('123456789012345678.10', 'SAR').replace(/\s/g, ' ')).toBe(
      'SAR 123,456,789,012,345,678.10',
    );
    expect(localeOf('ar').amount('12.500', 'KWD')).toContain('12.500');
    expect(localeOf('ar').time(new Date('2026-01-15T09:30:00Z')).text).toContain('datetime="2026-01-15T09:30:00.000Z"');
    expect(localeOf('ar').dir).toBe('rtl');
    expect(localeOf('en').t('pager.page', { page: 2, pages: 5 })).toBe('Page 2 of 5');
  });

  it("chooses the link's language, else the browser's best of ours, else English", () => {
    expect(chooseLanguage('en', 'ar')).toBe('en');
    expect(chooseLanguage(null, 'fr;q=1, ar-EG;q=0.5, en;q=0.2')).toBe('ar');
    expect(chooseLanguage(null, 'ar;q=0, en')).toBe('en');
    expect(chooseLanguage(null, undefined)).toBe('en');
  });
});
