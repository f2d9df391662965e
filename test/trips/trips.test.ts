// The trip domain: status changes inside the payment flow's transaction, and the latest invoice.
import { describe, expect, it } from 'vitest';
import { invoices } from '../../src/db/schema.js';
import { setTripStatus, TRIP_STATUSES } from '../../src/trips/status.js';
import { createTrip, getTrip } from '../../src/trips/trips.js';
import { useApps, useTenant } from '../support/apps.js';

describe('trip domain', () => {
  const service = useApps(['integrations']);
  const tenant = useTenant(service);

  it("setTripStatus moves a trip inside the caller's transaction, and not when it rolls back", async () => {
    const { db } = service.context;
    const { trip } = await createTrip(db, tenant.tenant.id, { title: 'Paid trip' });
    expect(trip.status).toBe('draft');
    for (const status of TRIP_STATUSES) {
      await db.transaction((tx) => setTripStatus(tx, trip.id, status));
      const moved = (await getTrip(db, trip.id, { tenantId: tenant.tenant.id, mode: 'live' })).trip;
      expect(moved.status).toBe(status);
      expect(moved.updatedAt.getTime()).toBeGreaterThanOrEqual(trip.updatedAt.getTime());
    }
    await expect(
      db.transaction(async (tx) => {
        await setTripStatus(tx, trip.id, 'draft');
        throw new Error('payment failed to record');
      }),
    ).rejects.toThrow('payment failed to record');
    expect((await getTrip(db, trip.id)).trip.status).toBe('cancelled');
  });

  it('shows the newest invoice of the trip of its own mode, by created_at', async () => {
    const { db } = service.context;
    const { trip } = await createTrip(db, tenant.tenant.id, { title: 'Invoiced trip' });
    const { trip: other } = await createTrip(db, tenant.tenant.id, { title: 'Another trip' });
    const insert = (tripId: string, amount: string, createdAt: string, status = 'pending') =>
      db
        .insert(invoices)
        .values({ tenantId: tenant.tenant.id, tripId, amount, currency: 'SAR', status, createdAt: new Date(createdAt) })
        .returning({ id: invoices.id });
    await insert(trip.id, '100.00', '2030-01-01T10:00:00Z', 'failed');
    const [latest] = await insert(trip.id, '120.50', '2030-01-02T10:00:00Z', 'paid');
    await insert(trip.id, '90.00', '2029-12-31T10:00:00Z');
    await insert(other.id, '999.00', '2031-01-01T10:00:00Z');
    // A newer test invoice naming the live trip (made before trips had a mode) is not its invoice.
    await db.insert(invoices).values({
      tenantId: tenant.tenant.id,
      tripId: trip.id,
      amount: '1.00',
      currency: 'SAR',
      mode: 'test',
      createdAt: new Date('2032-01-01T10:00:00Z'),
    });

    expect((await getTrip(db, trip.id, { tenantId: tenant.tenant.id, mode: 'live' })).invoice).toEqual({
      id: latest.id,
      status: 'paid',
      amount: '120.50',
      currency: 'SAR',
    });
    const api = await service.apps.integrations!.inject({
      method: 'GET',
      url: `/api/v1/trips/${trip.id}/`,
      headers: { authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}` },
    });
    expect(api.json().data.trip.invoice).toEqual({ id: latest.id, status: 'paid', amount: '120.50', currency: 'SAR' });
  });
});
