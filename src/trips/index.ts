// Trips: what the rest of the service may use of this domain.
export { setTripStatus, TRIP_STATUSES, type TripStatus } from './status.js';
export { createTrip, getTrip, type TripWithInvoice } from './trips.js';
