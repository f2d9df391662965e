// `/api/v1/trips/<uuid>/`: one of the tenant's trips (DECISIONS §6).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { TRIP_STATUSES, type TripStatus } from '../../trips/status.js';
import { getTrip } from '../../trips/trips.js';
import { Nullable, Timestamp, Uuid } from '../schemas.js';
import { Envelope, ERROR_RESPONSES, ok, ResourceIdParams, resourceId } from './envelope.js';

export const IsoDate = Type.String({ format: 'date', description: 'ISO 8601 date, YYYY-MM-DD' });

export const Travelers = Type.Object({
  adults: Type.Integer({ minimum: 1, maximum: 100 }),
  children: Type.Integer({ minimum: 0, maximum: 100 }),
});
export const Destination = Type.Object({ country: Uuid, city: Uuid });
const ItineraryItem = Type.Object({ time: Type.String(), title: Type.String(), description: Type.String() });
const ItineraryDay = Type.Object({ day: Type.Integer(), date: IsoDate, city: Uuid, items: Type.Array(ItineraryItem) });

/** A trip in the API shape; the admin host embeds it as is. */
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
/** The same, as a shared schema of the integrations host (see openapi.ts). */
export const Trip = Type.Object(TripObject.properties, { $id: 'Trip', title: 'Trip' });

export const tripRoutes: FastifyPluginAsyncTypebox<{ context: AppContext }> = async (app, { context }) => {
  app.get(
    '/trips/:id/',
    {
      schema: {
        tags: ['trips'],
        summary: "One of the tenant's trips",
        description: "Another tenant's trip, and an id that is not a UUID, are a 404.",
        params: ResourceIdParams,
        response: { 200: Envelope(Type.Object({ trip: Type.Ref(Trip) })), ...ERROR_RESPONSES },
      },
    },
    async (request) =>
      ok('Trip.', { trip: await getTrip(context.db, resourceId(request.params.id, 'Trip'), request.tenant.id) }),
  );
};
