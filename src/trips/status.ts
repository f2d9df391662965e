// Trip states (DECISIONS §6). The payment flow moves a trip inside its own transaction.
import { eq, sql } from 'drizzle-orm';
import type { Executor } from '../db/client.js';
import { trips } from '../db/schema.js';

export const TRIP_STATUSES = ['draft', 'pending_payment', 'booked', 'cancelled'] as const;
export type TripStatus = (typeof TRIP_STATUSES)[number];

/** Sets a trip's status; pass the caller's transaction. A missing trip changes nothing. */
export async function setTripStatus(tx: Executor, tripId: string, status: TripStatus): Promise<void> {
  await tx.update(trips).set({ status, updatedAt: sql`now()` }).where(eq(trips.id, tripId));
}
