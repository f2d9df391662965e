import { describe, expect, it } from 'vitest';
import {
  type Decimal,
  decimalEquals,
  formatAmount,
  MAX_DECIMAL_TEXT_LENGTH,
  minorUnits,
  parseDecimal,
  parseJsonNumber,
  validateInvoiceAmount,
} from '../../src/payments/money.js';

function decimal(text: string): Decimal {
  const value = parseDecimal(text);
  if (value === null) throw new Error(`not a decimal: ${text}`);
  return value;
}

describe('minorUnits (ISO 4217, not CLDR)', () => {
  it.each([
    // Gulf
    ['SAR', 2],
    ['AED', 2],
    ['QAR', 2],
    ['KWD', 3],
    ['BHD', 3],
    ['OMR', 3],
    // majors
    ['USD', 2],
    ['EUR', 2],
    ['GBP', 2],
    ['CHF', 2],
    ['CNY', 2],
    ['INR', 2],
    ['EGP', 2],
    // no minor unit
    ['JPY', 0],
    ['KRW', 0],
    ['VND', 0],
    ['CLP', 0],
    ['ISK', 0],
    ['UGX', 0],
    ['XAF', 0],
    ['XOF', 0],
    ['XPF', 0],
    ['PYG', 0],
    ['RWF', 0],
    ['BIF', 0],
    ['DJF', 0],
    ['GNF', 0],
    ['KMF', 0],
    ['VUV', 0],
    ['UYI', 0],
    // three places
    ['JOD', 3],
    ['IQD', 3],
    ['LYD', 3],
    ['TND', 3],
    // four places
    ['CLF', 4],
    ['UYW', 4],
    // where CLDR's display digits differ from ISO
    ['IDR', 2],
    ['HUF', 2],
    ['PKR', 2],
    ['LBP', 2],
    ['IRR', 2],
    ['YER', 2],
    ['COP', 2],
    // recent codes
    ['VED', 2],
    ['XCG', 2],
    ['ZWG', 2],
    ['SLE', 2],
    ['XAD', 2],
  ])('%s has %i', (code, places) => {
    expect(minorUnits(code)).toBe(places);
  });

  it.each([
    ['lower case', 'sar'],
    ['unknown', 'ABC'],
    ['withdrawn', 'HRK'],
    ['withdrawn at the euro', 'BGN'],
    ['no minor unit in ISO (gold)', 'XAU'],
    ['no minor unit in ISO (SDR)', 'XDR'],
    ['testing code', 'XTS'],
    ['empty', ''],
    ['object key', '__proto__'],
  ])('%s %s is undefined', (_name, code) => {
    expect(minorUnits(code)).toBeUndefined();
  });
});

describe('parseDecimal', () => {
  it.each([
    ['100.10', 10010n, 2],
    ['100.1', 1001n, 1],
    ['100', 100n, 0],
    ['0', 0n, 0],
    ['-0', 0n, 0],
    ['0.001', 1n, 3],
    ['-12.500', -12500n, 3],
    ['007.5', 75n, 1],
    ['123456789012345678901234567890.123456789', 123456789012345678901234567890123456789n, 9],
  ])('%s is %s at scale %i', (text, units, scale) => {
    expect(parseDecimal(text)).toStrictEqual({ units, scale });
  });

  it.each([
    '',
    ' 100',
    '100 ',
    '+100',
    '1e2',
    '1E2',
    '100.',
    '.5',
    '1,000.00',
    '1_000',
    '0x10',
    'NaN',
    'Infinity',
    '١٠٠',
    '100.00.0',
    '--1',
    '-',
    'abc',
    '1'.repeat(MAX_DECIMAL_TEXT_LENGTH + 1),
  ])('%j is not a plain decimal', (text) => {
    expect(parseDecimal(text)).toBeNull();
  });

  it('accepts text up to the length cap', () => {
    expect(parseDecimal('1'.repeat(MAX_DECIMAL_TEXT_LENGTH))?.units).toBe(BigInt('1'.repeat(MAX_DECIMAL_TEXT_LENGTH)));
  });
});

describe('parseJsonNumber (exponent form read exactly)', () => {
  it.each([
    ['1e2', 100n, 0],
    ['1E+2', 100n, 0],
    ['1.50e1', 150n, 1],
    ['1.5e-3', 15n, 4],
    ['-2.5E0', -25n, 1],
    ['100.10', 10010n, 2],
  ])('%s is %s at scale %i', (text, units, scale) => {
    expect(parseJsonNumber(text)).toStrictEqual({ units, scale });
  });

  it.each(['1e101', '1e-101', '1e999999999999', '1e', 'e2', '1.e2'])('%s is refused', (text) => {
    expect(parseJsonNumber(text)).toBeNull();
  });
});

describe('decimalEquals', () => {
  it.each([
    ['100.10', '100.1', true],
    ['100', '100.00', true],
    ['100.0', '100.00', true],
    ['0', '-0.000', true],
    ['12.500', '12.5', true],
    ['100.001', '100.00', false],
    ['100.01', '100.1', false],
    ['-100', '100', false],
    ['0.1', '0.10000000000000000000000001', false],
    ['99999999999999999999.99', '99999999999999999999.990', true],
  ])('%s = %s is %s', (a, b, equal) => {
    expect(decimalEquals(decimal(a), decimal(b))).toBe(equal);
    expect(decimalEquals(decimal(b), decimal(a))).toBe(equal);
  });
});

describe('formatAmount', () => {
  it.each([
    ['100', 2, '100.00'],
    ['100.1', 2, '100.10'],
    ['0.5', 3, '0.500'],
    ['0.001', 3, '0.001'],
    ['-1.5', 2, '-1.50'],
    ['-0.05', 2, '-0.05'],
    ['1500', 0, '1500'],
    ['0', 0, '0'],
    ['12.5', 4, '12.5000'],
  ])('%s with %i places is %s', (text, places, expected) => {
    expect(formatAmount(decimal(text), places)).toBe(expected);
  });

  it.each([
    ['100.001', 2],
    ['100.10', 1],
    ['1', -1],
    ['1', 1.5],
  ])('%s with %s places throws instead of rounding', (text, places) => {
    expect(() => formatAmount(decimal(text), places)).toThrow(RangeError);
  });
});

describe('validateInvoiceAmount', () => {
  it.each([
    ['100.00', 'SAR', '100.00'],
    ['100', 'SAR', '100.00'],
    ['100.5', 'SAR', '100.50'],
    ['0.01', 'USD', '0.01'],
    ['12.500', 'KWD', '12.500'],
    ['12.5', 'KWD', '12.500'],
    ['7', 'BHD', '7.000'],
    ['1500', 'JPY', '1500'],
    ['0.0001', 'CLF', '0.0001'],
    ['0100.00', 'SAR', '100.00'],
  ])('%s %s is accepted as %s', (text, currency, amount) => {
    expect(validateInvoiceAmount(text, currency)).toStrictEqual({ ok: true, amount });
  });

  it.each([
    ['100.000', 'SAR', 'too_many_places'],
    ['100.001', 'SAR', 'too_many_places'],
    ['12.5000', 'KWD', 'too_many_places'],
    ['1500.0', 'JPY', 'too_many_places'],
    ['1500.5', 'JPY', 'too_many_places'],
    ['0', 'SAR', 'not_positive'],
    ['0.00', 'SAR', 'not_positive'],
    ['-0', 'SAR', 'not_positive'],
    ['-100.00', 'SAR', 'not_positive'],
    ['abc', 'SAR', 'not_a_decimal'],
    ['', 'SAR', 'not_a_decimal'],
    ['1e2', 'SAR', 'not_a_decimal'],
    [' 100', 'SAR', 'not_a_decimal'],
    ['+100', 'SAR', 'not_a_decimal'],
    ['100', 'sar', 'unknown_currency'],
    ['100', 'XXX', 'unknown_currency'],
    ['100', 'XAU', 'unknown_currency'],
  ])('%j %s is refused: %s', (text, currency, reason) => {
    expect(validateInvoiceAmount(text, currency)).toStrictEqual({ ok: false, reason });
  });
});
