import { LosslessNumber, parse } from 'lossless-json';
import { describe, expect, it } from 'vitest';
import { AppError, FIELD_REQUIRED } from '../../src/errors.js';
import {
  amountMatches,
  type InvoiceStatus,
  type NotAppliedReason,
  parseNotification,
  planTransition,
  REQUIRED_FIELDS,
  type TransitionPlan,
} from '../../src/payments/notification.js';
import { isUuid } from '../../src/text.js';

const INVOICE_ID = '3f2b8c1e-9a4d-4e6f-8b7a-1c2d3e4f5a6b';

/** A valid callback body; numbers in one are LosslessNumbers, as the route's parser makes them. */
function body(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    invoice_id: INVOICE_ID,
    transaction_id: 'tx_1001',
    status: 'paid',
    amount: '100.00',
    currency: 'SAR',
    gateway: 'tap',
    ...fields,
  };
}

function without(field: string): Record<string, unknown> {
  const { [field]: _removed, ...rest } = body();
  return rest;
}

/** How parseNotification refused `value`: the code of its AppError and the field it names. */
function refusalOf(value: unknown) {
  try {
    parseNotification(value);
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    const [first] = error.details ?? [];
    return { code: error.code, ...(first && { field: first.field, missing: first.message === FIELD_REQUIRED }) };
  }
  return null;
}

const INVALID_JSON = { code: 'INVALID_JSON' };
const missing = (field: string) => ({ code: 'VALIDATION_ERROR', field, missing: true });
const invalidOne = (field: string) => ({ code: 'VALIDATION_ERROR', field, missing: false });

describe('parseNotification', () => {
  it("checks the body schema's fields in DECISIONS §4's order", () => {
    expect(REQUIRED_FIELDS).toEqual(['invoice_id', 'transaction_id', 'status', 'amount', 'currency', 'gateway']);
  });

  it('reads a valid notification', () => {
    expect(parseNotification(body({ gateway_data: { card: 'visa' } }))).toStrictEqual({
      invoiceId: INVOICE_ID,
      transactionId: 'tx_1001',
      status: 'paid',
      amountText: '100.00',
      currency: 'SAR',
      gateway: 'tap',
    });
  });

  it('reads a body straight from the lossless parser', () => {
    const parsed = parse(JSON.stringify(body()).replace('"100.00"', '100.10'));
    expect(parseNotification(parsed)).toMatchObject({ amountText: '100.10' });
  });

  it.each([
    ['100.10', '100.10'],
    ['100', '100'],
    ['1e2', '100'],
    ['1.50E+1', '15.0'],
    ['1.5e-3', '0.0015'],
    ['12345678901234567890.123456789', '12345678901234567890.123456789'],
    ['1e999999', '1e999999'],
  ])('a JSON number amount %s has amountText %s', (number, amountText) => {
    expect(parseNotification(body({ amount: new LosslessNumber(number) }))).toMatchObject({ amountText });
  });

  it.each(['100.10', ' 100 ', '1e2', 'abc'])('a string amount %j is kept as given', (amount) => {
    expect(parseNotification(body({ amount }))).toMatchObject({ amountText: amount });
  });

  it.each([
    ['an array', [body()]],
    ['a string', '{"invoice_id":"x"}'],
    ['a number', new LosslessNumber('1')],
    ['true', true],
    ['null', null],
    ['no body', undefined],
  ])('answers Invalid JSON body for %s', (_name, value) => {
    expect(refusalOf(value)).toStrictEqual(INVALID_JSON);
  });

  describe.each(REQUIRED_FIELDS)('%s', (field) => {
    it.each([
      ['absent', without(field)],
      ['null', body({ [field]: null })],
      ['empty', body({ [field]: '' })],
    ])('%s: Missing', (_name, value) => {
      expect(refusalOf(value)).toStrictEqual(missing(field));
    });

    const wrongTypes: unknown[] = [true, false, {}, [], ['x'], { value: '1' }];
    if (field !== 'amount') wrongTypes.push(new LosslessNumber('5'));
    it.each(wrongTypes)('%j: Invalid', (value) => {
      expect(refusalOf(body({ [field]: value }))).toStrictEqual(invalidOne(field));
    });

    it('at most 255 UTF-16 units, without NUL or an unpaired surrogate', () => {
      expect(refusalOf(body({ [field]: 'x'.repeat(255) }))).toBeNull();
      expect(refusalOf(body({ [field]: '😀'.repeat(127) }))).toBeNull();
      for (const value of ['x'.repeat(256), '😀'.repeat(128), 'tx\u0000', 'tx\ud800']) {
        expect(refusalOf(body({ [field]: value }))).toStrictEqual(invalidOne(field));
      }
    });

    it('whitespace is present, not missing', () => {
      expect(refusalOf(body({ [field]: ' ' }))).toBeNull();
    });
  });

  it('answers the first failing field in order, whatever the later ones hold', () => {
    expect(refusalOf({ invoice_id: new LosslessNumber('5') })).toStrictEqual(invalidOne('invoice_id'));
    expect(refusalOf({ invoice_id: INVOICE_ID })).toStrictEqual(missing('transaction_id'));
    expect(refusalOf(body({ status: null, amount: true, gateway: '' }))).toStrictEqual(missing('status'));
    expect(refusalOf(body({ amount: [], currency: null }))).toStrictEqual(invalidOne('amount'));
  });

  it('throws when the amount is a JS number: the route forgot losslessJsonNumbers', () => {
    expect(() => parseNotification(body({ amount: 100.1 }))).toThrow(TypeError);
  });
});

describe('isUuid', () => {
  it.each([INVOICE_ID, INVOICE_ID.toUpperCase(), '00000000-0000-0000-0000-000000000000'])('%s is a UUID', (text) => {
    expect(isUuid(text)).toBe(true);
  });

  it.each([
    '',
    'not-a-uuid',
    INVOICE_ID.replaceAll('-', ''),
    `{${INVOICE_ID}}`,
    ` ${INVOICE_ID}`,
    `${INVOICE_ID}\n`,
    `${INVOICE_ID}0`,
    INVOICE_ID.replace('3f2b8c1e', '3f2b8c1g'),
    '3f2b8c1e9-a4d-4e6f-8b7a-1c2d3e4f5a6b',
  ])('%j is not a UUID', (text) => {
    expect(isUuid(text)).toBe(false);
  });
});

describe('amountMatches against invoice amount 100.00', () => {
  it.each([
    ['100.00', true],
    ['100.0', true],
    ['100', true],
    ['100.000000', true],
    ['100.001', false],
    ['100.01', false],
    ['99.99', false],
    ['-100.00', false],
    ['1e2', false],
    [' 100', false],
    ['abc', false],
    ['', false],
    ['1e999999', false],
    [`100.${'0'.repeat(200)}`, false],
  ])('%j is %s', (amountText, matches) => {
    expect(amountMatches(amountText, '100.00')).toBe(matches);
  });

  it('compares a JSON number through its amountText', () => {
    const parsed = parseNotification(body({ amount: new LosslessNumber('1e2') }));
    expect(amountMatches(parsed.amountText, '100.00')).toBe(true);
  });

  it('compares three-place and zero-place invoices exactly', () => {
    expect(amountMatches('12.5', '12.500')).toBe(true);
    expect(amountMatches('12.501', '12.500')).toBe(false);
    expect(amountMatches('1500', '1500')).toBe(true);
    expect(amountMatches('1500.5', '1500')).toBe(false);
  });
});

describe('planTransition', () => {
  const unchanged = (current: InvoiceStatus, notAppliedReason: NotAppliedReason): TransitionPlan => ({
    next: current,
    applied: false,
    setPaidAt: false,
    notAppliedReason,
  });
  const behind = (current: InvoiceStatus) => unchanged(current, 'status_behind');
  const unknown = (current: InvoiceStatus) => unchanged(current, 'unknown_status');
  const moved = (next: InvoiceStatus, setPaidAt = false): TransitionPlan => ({
    next,
    applied: true,
    setPaidAt,
    notAppliedReason: null,
  });

  // The invoice last moved by another transaction than the notification's (or by none).
  it.each<[InvoiceStatus, string, TransitionPlan]>([
    ['pending', 'paid', moved('paid', true)],
    ['pending', 'failed', moved('failed')],
    ['pending', 'cancelled', moved('failed')],
    ['pending', 'refunded', moved('refunded')],
    ['pending', 'chargeback', unknown('pending')],
    ['pending', 'PAID', unknown('pending')],

    ['failed', 'paid', moved('paid', true)],
    ['failed', 'failed', moved('failed')],
    ['failed', 'cancelled', moved('failed')],
    ['failed', 'refunded', moved('refunded')],
    ['failed', 'chargeback', unknown('failed')],
    ['failed', 'PAID', unknown('failed')],

    ['paid', 'paid', unchanged('paid', 'possible_double_charge')],
    ['paid', 'failed', behind('paid')],
    ['paid', 'cancelled', behind('paid')],
    ['paid', 'refunded', moved('refunded')],
    ['paid', 'chargeback', unknown('paid')],
    ['paid', 'PAID', unknown('paid')],

    ['refunded', 'paid', behind('refunded')],
    ['refunded', 'failed', behind('refunded')],
    ['refunded', 'cancelled', behind('refunded')],
    ['refunded', 'refunded', moved('refunded')],
    ['refunded', 'chargeback', unknown('refunded')],
    ['refunded', 'PAID', unknown('refunded')],
  ])('%s + %s of another transaction', (current, notified, plan) => {
    expect(planTransition(current, notified, false)).toStrictEqual(plan);
  });

  // Only a second payment depends on the transaction: `paid` again under the one that paid it is
  // that payment (the same transaction_id through another gateway), not a second one.
  it.each<[InvoiceStatus, string, TransitionPlan]>([
    ['paid', 'paid', moved('paid')],
    ['failed', 'paid', moved('paid', true)],
    ['failed', 'failed', moved('failed')],
    ['paid', 'failed', behind('paid')],
    ['refunded', 'paid', behind('refunded')],
  ])('%s + %s of the transaction that moved it last', (current, notified, plan) => {
    expect(planTransition(current, notified, true)).toStrictEqual(plan);
  });

  it.each(['', ' paid', 'Paid', '__proto__', 'constructor', 'toString'])('%j is an unknown status', (notified) => {
    expect(planTransition('pending', notified, false)).toStrictEqual(unknown('pending'));
  });
});
