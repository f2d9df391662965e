// Invoices through the admin API (DECISIONS §8) and partnerctl.
import { describe, expect, it } from 'vitest';
import { useApps, useTenant } from '../support/apps.js';
import { TEST_ADMIN_TOKEN } from '../support/env.js';
import { partnerctl } from '../support/process.js';
import { createInvoice, createTrip, keyOf, notificationFor, notify, tripStatus } from './support.js';

const service = useApps(['admin', 'integrations'], { listen: true });
const tenant = useTenant(service, { gateway: 'tap' });

describe('POST /admin/v1/invoices', () => {
  it.each([
    ['SAR', '100.00', '100.00'],
    ['SAR', '100', '100.00'],
    ['AED', '0.5', '0.50'],
    ['KWD', '12.5', '12.500'],
    ['BHD', '1.234', '1.234'],
    ['OMR', '7', '7.000'],
    ['JPY', '1500', '1500'],
    ['SAR', '12345678901234567890.12', '12345678901234567890.12'],
  ])('stores %s %s as "%s" with the currency\'s minor units', async (currency, amount, stored) => {
    const response = await service.admin('POST', '/invoices', { tenant_id: tenant.tenant.id, amount, currency });
    expect(response.statusCode).toBe(201);
    const { invoice } = response.json();
    expect(invoice).toMatchObject({
      tenant_id: tenant.tenant.id,
      trip_id: null,
      amount: stored,
      currency,
      status: 'pending',
      gateway_reference: null,
      paid_at: null,
      payment_url: null,
    });
    expect(invoice.id).toMatch(/^[0-9a-f-]{36}$/);
    const shown = await service.admin('GET', `/invoices/${invoice.id}`);
    expect(shown.json().invoice).toEqual(invoice);
    // Serialised losslessly by the route, and still said to be JSON.
    expect(shown.headers['content-type']).toBe('application/json; charset=utf-8');
  });

  it.each([
    ['more places than SAR has', { amount: '100.001', currency: 'SAR' }, 'amount'],
    ['more places than KWD has', { amount: '12.5000', currency: 'KWD' }, 'amount'],
    ['any places for JPY', { amount: '1500.0', currency: 'JPY' }, 'amount'],
    ['zero', { amount: '0.00', currency: 'SAR' }, 'amount'],
    ['a negative amount', { amount: '-5.00', currency: 'SAR' }, 'amount'],
    ['exponent notation', { amount: '1e2', currency: 'SAR' }, 'amount'],
    ['not a number', { amount: 'ten', currency: 'SAR' }, 'amount'],
    ['a JSON number', { amount: 100, currency: 'SAR' }, 'amount'],
    ['an unknown currency', { amount: '1.00', currency: 'XYZ' }, 'currency'],
    ['a lower-case currency', { amount: '1.00', currency: 'sar' }, 'currency'],
    ['no amount', { currency: 'SAR' }, 'amount'],
  ])('refuses %s with 400 naming the field', async (_case, fields, field) => {
    const response = await service.admin('POST', '/invoices', { tenant_id: tenant.tenant.id, ...fields });
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe('VALIDATION_ERROR');
    expect(response.json().error.details[0].field).toBe(field);
  });

  it("answers 404 for an unknown tenant or trip, 400 for another tenant's trip, 409 for an inactive tenant", async () => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    const noTenant = await service.admin('POST', '/invoices', { tenant_id: unknown, amount: '1.00', currency: 'SAR' });
    expect(noTenant.statusCode).toBe(404);
    const noTrip = await service.admin('POST', '/invoices', {
      tenant_id: tenant.tenant.id,
      amount: '1.00',
      currency: 'SAR',
      trip_id: unknown,
    });
    expect(noTrip.statusCode).toBe(404);
    const other = await service.createTenant({ gateway: 'tap' });
    const theirTrip = await createTrip(service, other);
    const foreign = await service.admin('POST', '/invoices', {
      tenant_id: tenant.tenant.id,
      amount: '1.00',
      currency: 'SAR',
      trip_id: theirTrip.id,
    });
    expect(foreign.statusCode).toBe(400);
    expect(foreign.json().error.details[0]).toMatchObject({ field: 'trip_id', message: 'belongs to another tenant' });
    await service.admin('PATCH', `/tenants/${other.tenant.id}`, { is_active: false });
    const inactive = await service.admin('POST', '/invoices', {
      tenant_id: other.tenant.id,
      amount: '1.00',
      currency: 'SAR',
    });
    expect(inactive.statusCode).toBe(409);
  });

  it('moves the trip to pending_payment, then booked when paid, then cancelled when refunded', async () => {
    const trip = await createTrip(service, tenant);
    expect(trip.status).toBe('draft');
    const invoice = await createInvoice(service, tenant, { trip_id: trip.id });
    expect(invoice.trip_id).toBe(trip.id);
    expect(await tripStatus(service, trip.id)).toBe('pending_payment');
    await notify(service, notificationFor(invoice, { status: 'paid' }), keyOf(tenant));
    expect(await tripStatus(service, trip.id)).toBe('booked');
    await notify(service, notificationFor(invoice, { status: 'refunded' }), keyOf(tenant));
    expect(await tripStatus(service, trip.id)).toBe('cancelled');
  });
});

describe('GET /admin/v1/invoices/{id}', () => {
  it('answers 404 for an unknown invoice and 400 for a malformed id', async () => {
    expect((await service.admin('GET', '/invoices/00000000-0000-4000-8000-000000000000')).statusCode).toBe(404);
    expect((await service.admin('GET', '/invoices/nope')).statusCode).toBe(400);
  });

  it('needs the admin token', async () => {
    const response = await service.apps.admin!.inject({
      method: 'GET',
      url: '/admin/v1/invoices/00000000-0000-4000-8000-000000000000',
    });
    expect(response.statusCode).toBe(401);
  });
});

describe('partnerctl invoices and events', () => {
  it('creates and shows an invoice, and lists its events', async () => {
    const env = { ADMIN_URL: service.urls.admin!, ADMIN_TOKEN: TEST_ADMIN_TOKEN };
    const created = await partnerctl(
      ['invoices', 'create', '--tenant', tenant.tenant.id, '--amount', '100.00', '--currency', 'SAR', '--json'],
      env,
    );
    expect(created.code).toBe(0);
    const { invoice } = JSON.parse(created.stdout);
    expect(invoice).toMatchObject({ amount: '100.00', currency: 'SAR', status: 'pending' });

    await notify(service, notificationFor(invoice, { transaction_id: 'txn-cli' }), keyOf(tenant));
    const shown = await partnerctl(['invoices', 'show', invoice.id], env);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/status\s+paid/);
    expect(shown.stdout).toContain('txn-cli');

    const events = await partnerctl(['events', 'list', '--invoice', invoice.id, '--json'], env);
    expect(events.code).toBe(0);
    expect(JSON.parse(events.stdout).events).toEqual([
      expect.objectContaining({ transaction_id: 'txn-cli', status: 'paid', applied: true }),
    ]);

    const refused = await partnerctl(
      ['invoices', 'create', '--tenant', tenant.tenant.id, '--amount', '1.001', '--currency', 'SAR'],
      env,
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('amount');
  });
});
