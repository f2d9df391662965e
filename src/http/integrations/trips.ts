// `/api/v1/trips/<uuid>/`: one of the tenant's trips (DECISIONS §6).
import { Type } from '@sinclair/typebox';
import { getTrip } from '../../trips/index.js';
import { route } from '../route.js';
import { TripObject, tripView } from '../shapes/trip.js';
import { Envelope, ok, ResourceIdParams, resourceId } from './envelope.js';
import { credentialScope } from './tenant-auth.js';

/** The same, as a shared schema of the integrations host (see openapi.ts). */
export const Trip = Type.Object(TripObject.properties, { $id: 'Trip', title: 'Trip' });

export const tripRoutes = [
  route({
    method: 'GET',
    url: '/trips/:id/',
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
    handler: (context) => async (request) =>
      ok('Trip.', {
        trip: tripView(await getTrip(context.db, resourceId(request.params.id, 'Trip'), credentialScope(request))),
      }),
  }),
];
