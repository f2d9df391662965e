// A trip in the API shape (DECISIONS §6): served by the integrations host, embedded by the admin host.
import { type Static, Type } from '@sinclair/typebox';
import { TRIP_STATUSES, type TripStatus, type TripWithInvoice } from '../../trips/index.js';
import { Nullable, Timestamp, Uuid } from '../schemas.js';

export const IsoDate = Type.String({ format: 'date', description: 'ISO 8601 date, YYYY-MM-DD' });

/** Most travellers of one kind a trip may have. */
const TRAVELERS_MAX = 100;
export const Travelers = Type.Object({
  adults: Type.Integer({ minimum: 1, maximum: TRAVELERS_MAX, description: 'Default 1' }),
  children: Type.Integer({ minimum: 0, maximum: TRAVELERS_MAX, description: 'Default 0' }),
});
export const Destination = Type.Object({ country: Uuid, city: Uuid });
const ItineraryItem = Type.Object({ time: Type.String(), title: Type.String(), description: Type.String() });
const ItineraryDay = Type.Object({ day: Type.Integer(), date: IsoDate, city: Uuid, items: Type.Array(ItineraryItem) });

export const TripObject = Type.Object({
  id: Uuid,
  title: Type.String(),
  status: Type.Unsafe<TripStatus>({ type: 'string', enum: [...TRIP_STATUSES] }),
  start_date: Nullable(IsoDate),
  end_date: Nullable(IsoDate),
  travelers: Travelers,
  destinations: Type.Array(Destination),
  itinerary: Type.Array(ItineraryDay, { description: 'Days of the trip, each with its items' }),
  invoice: Nullable(
    Type.Object(
      {
        id: Uuid,
        status: Type.String(),
        amount: Type.String({ description: "Decimal string with the currency's minor-unit places" }),
        currency: Type.String({ description: 'ISO 4217 code' }),
      },
      { description: "The trip's latest invoice" },
    ),
  ),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export function tripView({ trip, invoice }: TripWithInvoice): Static<typeof TripObject> {
  return {
    id: trip.id,
    title: trip.title,
    status: trip.status as TripStatus,
    start_date: trip.startDate,
    end_date: trip.endDate,
    travelers: trip.travelers as Static<typeof Travelers>,
    destinations: trip.destinations as Static<typeof Destination>[],
    itinerary: trip.itinerary as Static<typeof ItineraryDay>[],
    invoice,
    created_at: trip.createdAt.toISOString(),
    updated_at: trip.updatedAt.toISOString(),
  };
}
