// `/api/v1/trips/<uuid>/`: one of the tenant's trips (DECISIONS §6).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { getTrip } from '../../trips/index.js';
import { TripObject, tripView } from '../shapes/trip.js';
import { Envelope, ok, ResourceIdParams, resourceId } from './envelope.js';
import { credentialScope } from './tenant-auth.js';

/** The same, as a shared schema of the integrations host (see openapi.ts). */
export const Trip = Type.Object(TripObject.properties, { $id: 'Trip', title: 'Trip' });

export const tripRoutes: FastifyPluginAsyncTypebox<{ context: AppContext }> = async (app, { context }) => {
  app.get(
    '/trips/:id/',
    {
      schema: {
        operationId: 'getTrip',
        tags: ['trips'],
        summary: "One of the tenant's trips",
        description:
          "Another tenant's trip, the other mode's (a live trip to a test secret, a test trip to a live one), " +
          'and an id that is not a UUID, are a 404.',
        params: ResourceIdParams,
        response: { 200: Envelope(Type.Object({ trip: Type.Ref(Trip) })) },
      },
    },
    async (request) =>
      ok('Trip.', {
        trip: tripView(await getTrip(context.db, resourceId(request.params.id, 'Trip'), credentialScope(request))),
      }),
  );
};
