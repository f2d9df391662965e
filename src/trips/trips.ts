// Trips (DECISIONS §6, §11): one tenant's trip, with its latest invoice of the trip's own mode.
// Operators create them, live or test; partners read them. Every read is scoped by the tenant and
// the mode the caller's credential resolved to: the other mode's trip does not exist for it.
import { and, desc, eq, inArray } from 'drizzle-orm';
import type { Executor } from '../db/client.js';
import { cities, invoices, trips } from '../db/schema.js';
import { type FieldError, invalid, notFound } from '../errors.js';
import type { Mode } from '../tenants/index.js';

export interface Travelers {
  adults: number;
  children: number;
}

export interface Destination {
  country: string;
  city: string;
}

export interface ItineraryItem {
  time: string;
  title: string;
  description: string;
}

export interface ItineraryDay {
  day: number;
  date: string;
  city: string;
  items: ItineraryItem[];
}

interface TripInput {
  title: string;
  start_date?: string | null;
  end_date?: string | null;
  travelers?: Partial<Travelers>;
  destinations?: Destination[];
  itinerary?: ItineraryDay[];
  /** Default `live`; a `test` trip is seen and moved only by test credentials and test invoices. */
  mode?: Mode;
}

const DEFAULT_TRAVELERS: Travelers = { adults: 1, children: 0 };

type TripRow = typeof trips.$inferSelect;

interface LatestInvoice {
  id: string;
  status: string;
  amount: string;
  currency: string;
}

/** A trip with its latest invoice (null before the first): how both hosts show a trip. */
export interface TripWithInvoice {
  trip: TripRow;
  invoice: LatestInvoice | null;
}

/**
 * The trip's latest invoice of its own mode, or null. Invoices are written by the payment flow; a
 * test invoice that named a live trip before trips had a mode is not that trip's.
 */
async function withLatestInvoice(db: Executor, trip: TripRow): Promise<TripWithInvoice> {
  const [invoice] = await db
    .select({ id: invoices.id, status: invoices.status, amount: invoices.amount, currency: invoices.currency })
    .from(invoices)
    .where(and(eq(invoices.tripId, trip.id), eq(invoices.tenantId, trip.tenantId), eq(invoices.mode, trip.mode)))
    .orderBy(desc(invoices.createdAt), desc(invoices.id))
    .limit(1);
  return { trip, invoice: invoice ?? null };
}

/**
 * Rules the schema cannot state: dates in order, every city known and in its destination's
 * country, itinerary days within the trip's dates. Each broken rule names its field.
 */
async function checkTrip(db: Executor, input: TripInput): Promise<void> {
  const problems: FieldError[] = [];
  if (!input.title.trim()) problems.push({ field: 'title', message: 'must not be blank' });
  const { start_date: start, end_date: end } = input;
  if (start && end && end < start) problems.push({ field: 'end_date', message: 'must not be before start_date' });

  const destinations = input.destinations ?? [];
  const itinerary = input.itinerary ?? [];
  const cityIds = [...new Set([...destinations.map((d) => d.city), ...itinerary.map((d) => d.city)])];
  const known = cityIds.length
    ? await db.select({ id: cities.id, countryId: cities.countryId }).from(cities).where(inArray(cities.id, cityIds))
    : [];
  const countryOf = new Map(known.map((city) => [city.id, city.countryId]));

  destinations.forEach((destination, index) => {
    const country = countryOf.get(destination.city);
    if (country === undefined) problems.push({ field: `destinations.${index}.city`, message: 'is not a known city' });
    else if (country !== destination.country) {
      problems.push({ field: `destinations.${index}.country`, message: 'is not the country of that city' });
    }
  });
  itinerary.forEach((day, index) => {
    if (!countryOf.has(day.city)) problems.push({ field: `itinerary.${index}.city`, message: 'is not a known city' });
    if ((start && day.date < start) || (end && day.date > end)) {
      problems.push({ field: `itinerary.${index}.date`, message: 'must be within start_date and end_date' });
    }
  });
  if (problems.length) throw invalid(problems.map((problem) => ({ ...problem, location: 'body' })));
}

export async function createTrip(db: Executor, tenantId: string, input: TripInput): Promise<TripWithInvoice> {
  await checkTrip(db, input);
  const [trip] = await db
    .insert(trips)
    .values({
      tenantId,
      title: input.title.trim(),
      startDate: input.start_date ?? null,
      endDate: input.end_date ?? null,
      travelers: { ...DEFAULT_TRAVELERS, ...input.travelers },
      destinations: input.destinations ?? [],
      itinerary: input.itinerary ?? [],
      mode: input.mode ?? 'live',
    })
    .returning();
  return withLatestInvoice(db, trip);
}

/**
 * A trip by id; with `scope` (a partner's credential), only that tenant's in that mode: another
 * tenant's trip, and the other mode's, are not found.
 */
export async function getTrip(
  db: Executor,
  id: string,
  scope?: { tenantId: string; mode: Mode },
): Promise<TripWithInvoice> {
  const [trip] = await db
    .select()
    .from(trips)
    .where(and(eq(trips.id, id), scope && eq(trips.tenantId, scope.tenantId), scope && eq(trips.mode, scope.mode)));
  if (!trip) throw notFound('Trip');
  return withLatestInvoice(db, trip);
}
