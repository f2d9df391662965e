// Admin routes for trips (DECISIONS §8): operators create a tenant's trip; partners then read it.
import { type Static, Type } from '@sinclair/typebox';
import { getTenant } from '../../tenants/index.js';
import { createTrip, getTrip, type TripWithInvoice } from '../../trips/index.js';
import { route } from '../route.js';
import { IdParams, ModeSchema, Nullable, Uuid } from '../schemas.js';
import { Destination, IsoDate, Travelers, TripObject, tripView } from '../shapes/trip.js';

const TripMode = ModeSchema(
  'Default `live`. A `test` trip is seen only with test credentials and named only by test invoices; ' +
    'its `invoice` is its latest test invoice',
);

/** Text PostgreSQL can store: no NUL, no unpaired surrogate. */
const Text = (maxLength: number) =>
  Type.String({ maxLength, pattern: '^[^\\u0000\\p{Cs}]*$', description: `At most ${maxLength} characters` });

const TripBody = Type.Object(
  {
    tenant_id: Uuid,
    mode: Type.Optional(TripMode),
    title: Type.String({ ...Text(200), minLength: 1 }),
    start_date: Type.Optional(Nullable(IsoDate)),
    end_date: Type.Optional(Nullable(IsoDate)),
    travelers: Type.Optional(Type.Partial(Travelers, { additionalProperties: false })),
    destinations: Type.Optional(
      Type.Array(Type.Object(Destination.properties, { additionalProperties: false }), {
        maxItems: 50,
        description: 'Known cities, each with its own country',
      }),
    ),
    itinerary: Type.Optional(
      Type.Array(
        Type.Object(
          {
            day: Type.Integer({ minimum: 1, maximum: 366 }),
            date: IsoDate,
            city: Uuid,
            items: Type.Array(
              Type.Object(
                {
                  time: Type.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$', description: 'HH:MM, 24-hour' }),
                  title: Type.String({ ...Text(200), minLength: 1 }),
                  description: Text(2000),
                },
                { additionalProperties: false },
              ),
              { maxItems: 50 },
            ),
          },
          { additionalProperties: false },
        ),
        { maxItems: 366, description: 'Dates within start_date and end_date; cities must be known' },
      ),
    ),
  },
  { additionalProperties: false },
);

/** The trip as partners see it, and its mode. */
const AdminTrip = Type.Object({ ...TripObject.properties, mode: TripMode });
const TripResponse = Type.Object({ trip: AdminTrip });
const adminTripView = (found: TripWithInvoice): Static<typeof AdminTrip> => ({
  ...tripView(found),
  mode: found.trip.mode,
});

export const adminTripRoutes = [
  route({
    method: 'POST',
    url: '/trips',
    config: { resource: 'Tenant' },
    schema: {
      operationId: 'createTrip',
      tags: ['trips'],
      summary: "Create a tenant's trip (status draft)",
      body: TripBody,
      response: { 201: TripResponse },
    },
    handler: (context) => async (request, reply) => {
      const { tenant_id: tenantId, ...input } = request.body;
      await getTenant(context.db, tenantId);
      return reply.code(201).send({ trip: adminTripView(await createTrip(context.db, tenantId, input)) });
    },
  }),

  route({
    method: 'GET',
    url: '/trips/:id',
    config: { resource: 'Trip' },
    schema: {
      operationId: 'getTrip',
      summary: 'A trip, in the API shape partners see',
      tags: ['trips'],
      params: IdParams,
      response: { 200: TripResponse },
    },
    handler: (context) => async (request) => ({ trip: adminTripView(await getTrip(context.db, request.params.id)) }),
  }),
];
