/**
 * Exact decimal money: amounts are read from their decimal text into integers, never into binary
 * floats, so "100.10" equals "100.1" and 100.001 never rounds into 100.00.
 */

/** The number `units × 10^-scale`, with the scale as written: "100.10" is 10010n at scale 2. */
export interface Decimal {
  readonly units: bigint;
  readonly scale: number;
}

/**
 * Longest text read as a number. It bounds the BigInt work hostile input can cause; no invoice
 * amount comes near it, so longer text simply never matches one.
 */
export const MAX_DECIMAL_TEXT_LENGTH = 100;

/** A JSON number token (leading zeros tolerated); `parseDecimal` takes it without the exponent. */
const NUMBER_TEXT = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/**
 * ISO 4217 minor units, from List One as published by the maintenance agency (SIX) on 2026-01-01.
 * Trusted over Intl: `Intl.supportedValuesOf('currency')` varies with Node's ICU, still lists
 * withdrawn codes (HRK, BGN, ANG, ZWL, ...) and lacks fund codes (VED, CLF, UYW, ...), and
 * Intl's fraction digits are CLDR's display digits, not ISO's (CLDR gives IQD 0, ISO 3; CLDR gives
 * IDR, HUF, PKR, LBP, ... 0, ISO 2). Codes whose ISO minor unit is "N.A." (gold and other metals,
 * XDR, XSU, XUA, the bond-market units, XTS, XXX) are not amounts anyone invoices in and are absent.
 */
const CODES_BY_MINOR_UNITS: Readonly<Record<number, string>> = {
  0: 'BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF',
  2:
    'AED AFN ALL AMD AOA ARS AUD AWG AZN BAM BBD BDT BMD BND BOB BOV BRL BSD BTN BWP BYN BZD CAD ' +
    'CDF CHE CHF CHW CNY COP COU CRC CUP CVE CZK DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS ' +
    'GIP GMD GTQ GYD HKD HNL HTG HUF IDR ILS INR IRR JMD KES KGS KHR KPW KYD KZT LAK LBP LKR LRD ' +
    'LSL MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD PAB ' +
    'PEN PGK PHP PKR PLN QAR RON RSD RUB SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP ' +
    'SZL THB TJS TMT TOP TRY TTD TWD TZS UAH USD USN UYU UZS VED VES WST XAD XCD XCG YER ZAR ZMW ZWG',
  3: 'BHD IQD JOD KWD LYD OMR TND',
  4: 'CLF UYW',
};

const MINOR_UNITS: ReadonlyMap<string, number> = new Map(
  Object.entries(CODES_BY_MINOR_UNITS).flatMap(([places, codes]) =>
    codes.split(' ').map((code) => [code, Number(places)] as const),
  ),
);

/** Decimal places of an ISO 4217 code (exact, upper case), or undefined for anything else. */
export function minorUnits(currency: string): number | undefined {
  return MINOR_UNITS.get(currency);
}

/** Plain decimal text only (`-?\d+(\.\d+)?`): no exponent, sign `+`, spaces or bare point. */
export function parseDecimal(text: string): Decimal | null {
  return /[eE]/.test(text) ? null : parseJsonNumber(text);
}

/** The exact value of a JSON number's source text, exponent included: "1e2" is 100, "1.50e1" is 15.0. */
export function parseJsonNumber(text: string): Decimal | null {
  const match = text.length <= MAX_DECIMAL_TEXT_LENGTH ? NUMBER_TEXT.exec(text) : null;
  if (!match) return null;
  const [, sign, integerDigits, fractionDigits = '', exponentText = '0'] = match;
  const exponent = Number(exponentText);
  if (Math.abs(exponent) > MAX_DECIMAL_TEXT_LENGTH) return null;
  const scale = fractionDigits.length - exponent;
  const magnitude = BigInt(integerDigits + fractionDigits) * 10n ** BigInt(Math.max(0, -scale));
  return { units: sign ? -magnitude : magnitude, scale: Math.max(0, scale) };
}

/** Exact numeric equality: 100.10 equals 100.1, 100 equals 100.00, 100.001 differs from 100.00. */
export function decimalEquals(a: Decimal, b: Decimal): boolean {
  const scale = Math.max(a.scale, b.scale);
  return unitsAtScale(a, scale) === unitsAtScale(b, scale);
}

/** Plain decimal text with exactly `places` decimals; throws rather than round away digits. */
export function formatAmount(amount: Decimal, places: number): string {
  if (!Number.isInteger(places) || places < amount.scale) {
    throw new RangeError(`${places} places cannot hold an amount of scale ${amount.scale} without rounding`);
  }
  const units = unitsAtScale(amount, places);
  const sign = units < 0n ? '-' : '';
  const digits = (units < 0n ? -units : units).toString().padStart(places + 1, '0');
  return places === 0 ? sign + digits : `${sign}${digits.slice(0, -places)}.${digits.slice(-places)}`;
}

function unitsAtScale(amount: Decimal, scale: number): bigint {
  return amount.units * 10n ** BigInt(scale - amount.scale);
}

type InvoiceAmountError = 'unknown_currency' | 'not_a_decimal' | 'not_positive' | 'too_many_places';

type InvoiceAmountResult = { ok: true; amount: string } | { ok: false; reason: InvoiceAmountError };

/**
 * The admin API's invoice amount rule (DECISIONS §8): a positive decimal string with at most the
 * currency's minor-unit places, as written ("100.000" SAR is too many even though it is 100).
 * Fewer places are accepted and padded: "100" SAR becomes "100.00", "12.5" KWD "12.500".
 */
export function validateInvoiceAmount(text: string, currency: string): InvoiceAmountResult {
  const places = minorUnits(currency);
  if (places === undefined) return { ok: false, reason: 'unknown_currency' };
  const amount = parseDecimal(text);
  if (amount === null) return { ok: false, reason: 'not_a_decimal' };
  if (amount.units <= 0n) return { ok: false, reason: 'not_positive' };
  if (amount.scale > places) return { ok: false, reason: 'too_many_places' };
  return { ok: true, amount: formatAmount(amount, places) };
}
