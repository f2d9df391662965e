// The portal's two languages: its texts from one catalogue each (messages/), its numbers, amounts
// and dates formatted for the language by Intl, and the direction Arabic is written in.
import { PORTAL_LANGUAGES, type PortalLanguage } from '../../tenants/index.js';
import { type Html, html } from '../html.js';
import { ar } from './messages/ar.js';
import { en, type MessageKey, type Messages } from './messages/en.js';

const CATALOGUES: Record<PortalLanguage, Messages> = { en, ar };

export interface Locale {
  language: PortalLanguage;
  dir: 'ltr' | 'rtl';
  /** The text of `key`, its `{name}`s replaced by `values`. */
  t(key: MessageKey, values?: Record<string, string | number>): string;
  number(value: number): string;
  /** A decimal amount as sent (`"100.10"`) with its currency, every digit kept. */
  amount(decimal: string, currency: string): string;
  /** A moment, in UTC, in a `<time>` element carrying the exact instant. */
  time(value: Date | string | null | undefined): Html;
}

/** The language of the link, else the first of ours the browser asks for (Accept-Language), else English. */
export function chooseLanguage(linked: PortalLanguage | null, acceptLanguage: string | undefined): PortalLanguage {
  if (linked) return linked;
  const asked = (acceptLanguage ?? '')
    .split(',')
    .map((part) => {
      const [tag, ...parameters] = part.trim().split(';');
      const quality = parameters.map((p) => /^\s*q=([0-9.]+)\s*$/.exec(p)?.[1]).find(Boolean);
      return { language: tag.toLowerCase().split('-')[0], quality: quality === undefined ? 1 : Number(quality) };
    })
    .filter((entry) => entry.quality > 0)
    .sort((a, b) => b.quality - a.quality);
  const found = asked.find((entry) => (PORTAL_LANGUAGES as readonly string[]).includes(entry.language));
  return (found?.language as PortalLanguage | undefined) ?? 'en';
}

const locales = new Map<PortalLanguage, Locale>();

export function localeOf(language: PortalLanguage): Locale {
  const known = locales.get(language);
  if (known) return known;
  const messages = CATALOGUES[language];
  const numbers = new Intl.NumberFormat(language);
  const dates = new Intl.DateTimeFormat(language, { dateStyle: 'medium', timeStyle: 'medium', timeZone: 'UTC' });
  const locale: Locale = {
    language,
    dir: language === 'ar' ? 'rtl' : 'ltr',
    t: (key, values = {}) =>
      messages[key].replace(/\{(\w+)\}/g, (whole, name: string) => String(values[name] ?? whole)),
    number: (value) => numbers.format(value),
    amount: (decimal, currency) => {
      const places = decimal.split('.')[1]?.length ?? 0;
      const format = new Intl.NumberFormat(language, {
        style: 'currency',
        currency,
        minimumFractionDigits: places,
        maximumFractionDigits: places,
      });
      // A decimal string is formatted exactly (Intl's string form), never through a float.
      return format.format(decimal as unknown as number);
    },
    time: (value) => {
      if (!value) return html`<span class="muted">${messages['endpoint.never']}</span>`;
      const at = typeof value === 'string' ? new Date(value) : value;
      return html`<time datetime="${at.toISOString()}">${dates.format(at)} ${messages['time.utc']}</time>`;
    },
  };
  locales.set(language, locale);
  return locale;
}
