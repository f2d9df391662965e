// Test and live never touch (DECISIONS §11) on suggested prompts and trips: a test SSO secret
// lists, creates, changes and deletes only the tenant's test prompts and sees only test trips; the
// effective set of a test secret is never the live prompts, cached or not; a test invoice names
// only a test trip and moves it, and a trip's `invoice` is the latest of its own mode.
import { sql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { notificationFor, notify, showInvoice, type TripJson } from '../../payments/support.js';
import { useApps, useTenant } from '../../support/apps.js';
import { type ApiRequest, apiAs, expectError, expectOk } from './api.js';

const PROMPTS = '/api/v1/suggested-prompts/';

describe('test and live modes', () => {
  const service = useApps(['integrations', 'admin']);
  const tenant = useTenant(service, { gateway: 'tap' });
  let live: ApiRequest;
  let test: ApiRequest;
  let testKey: string;

  beforeAll(async () => {
    const issue = async (kind: string) =>
      (await service.admin('POST', `/tenants/${tenant.tenant.id}/credentials`, { kind })).json().secret as string;
    live = apiAs(service, tenant.credentials.sso_hmac_secret);
    test = apiAs(service, await issue('test_sso_hmac_secret'));
    testKey = await issue('test_partner_api_key');
  });

  const effective = async (api: ApiRequest) =>
    expectOk<'getEffectiveSuggestedPrompts'>(await api('GET', `${PROMPTS}effective/?language=en`));

  it("keeps a test secret's prompts apart from the live ones, the effective set and its cache included", async () => {
    // Both effective sets are the defaults, each now cached.
    expect((await effective(live)).source).toBe('default');
    expect((await effective(test)).source).toBe('default');

    const livePrompt = expectOk<'createSuggestedPrompt'>(
      await live('POST', PROMPTS, { language: 'en', text: 'Live prompt' }),
      201,
    ).prompt;
    // The live prompt is the live widget's; a test secret still gets the defaults, not the live set.
    expect((await effective(live)).prompts.map((prompt) => prompt.text)).toEqual(['Live prompt']);
    const testDefaults = await effective(test);
    expect(testDefaults.source).toBe('default');
    expect(testDefaults.prompts.map((prompt) => prompt.id)).not.toContain(livePrompt.id);
    expect(expectOk<'listSuggestedPrompts'>(await test('GET', PROMPTS)).prompts).toEqual([]);

    // A live prompt is a 404 to the test secret, whatever it tries.
    expectError(await test('PATCH', `${PROMPTS}${livePrompt.id}/`, { text: 'Hijacked' }), 404, 'NOT_FOUND');
    expectError(await test('DELETE', `${PROMPTS}${livePrompt.id}/`), 404, 'NOT_FOUND');

    const testPrompt = expectOk<'createSuggestedPrompt'>(
      await test('POST', PROMPTS, { language: 'en', text: 'Test prompt' }),
      201,
    ).prompt;
    expect((await effective(test)).prompts.map((prompt) => prompt.text)).toEqual(['Test prompt']);
    expect((await effective(live)).prompts.map((prompt) => prompt.text)).toEqual(['Live prompt']);
    expectError(await live('PATCH', `${PROMPTS}${testPrompt.id}/`, { is_active: false }), 404, 'NOT_FOUND');
    expectError(await live('DELETE', `${PROMPTS}${testPrompt.id}/`), 404, 'NOT_FOUND');
    expect(expectOk<'listSuggestedPrompts'>(await live('GET', PROMPTS)).prompts.map((p) => p.id)).toEqual([
      livePrompt.id,
    ]);

    // Its own prompt the test secret changes and deletes; the live one is untouched throughout.
    expectOk(await test('PATCH', `${PROMPTS}${testPrompt.id}/`, { text: 'Test prompt, changed' }));
    expectOk(await test('DELETE', `${PROMPTS}${testPrompt.id}/`));
    expect((await effective(test)).source).toBe('default');
    expect(expectOk<'listSuggestedPrompts'>(await live('GET', PROMPTS)).prompts).toMatchObject([
      { id: livePrompt.id, text: 'Live prompt', is_active: true },
    ]);
  });

  const createTrip = async (mode?: 'live' | 'test') => {
    const response = await service.admin('POST', '/trips', {
      tenant_id: tenant.tenant.id,
      title: `A ${mode ?? 'default'} trip`,
      ...(mode && { mode }),
    });
    expect(response.statusCode, response.body).toBe(201);
    return response.json<{ trip: TripJson & { mode: string } }>().trip;
  };

  it('shows each credential only the trips of its mode; an admin trip says its mode (default live)', async () => {
    const liveTrip = await createTrip();
    const testTrip = await createTrip('test');
    expect([liveTrip.mode, testTrip.mode]).toEqual(['live', 'test']);
    expect((await service.admin('GET', `/trips/${testTrip.id}`)).json().trip.mode).toBe('test');

    expect(expectOk<'getTrip'>(await live('GET', `/api/v1/trips/${liveTrip.id}/`)).trip.id).toBe(liveTrip.id);
    expect(expectOk<'getTrip'>(await test('GET', `/api/v1/trips/${testTrip.id}/`)).trip.id).toBe(testTrip.id);
    expectError(await test('GET', `/api/v1/trips/${liveTrip.id}/`), 404, 'NOT_FOUND');
    expectError(await live('GET', `/api/v1/trips/${testTrip.id}/`), 404, 'NOT_FOUND');
  });

  it("lets a test invoice name only a test trip, moves that trip, and never touches a live trip's invoice", async () => {
    const liveTrip = await createTrip('live');
    const testTrip = await createTrip('test');
    const liveInvoice = (
      await service.admin('POST', '/invoices', {
        tenant_id: tenant.tenant.id,
        amount: '300.00',
        currency: 'SAR',
        trip_id: liveTrip.id,
      })
    ).json().invoice;

    // A live trip's id is a 404 to a test invoice; nothing is made, the live trip keeps its invoice.
    expectError(
      await test('POST', '/api/v1/test/invoices/', { amount: '1.00', currency: 'SAR', trip_id: liveTrip.id }),
      404,
      'NOT_FOUND',
    );
    // An operator's live invoice may not name a test trip either.
    const crossed = await service.admin('POST', '/invoices', {
      tenant_id: tenant.tenant.id,
      amount: '1.00',
      currency: 'SAR',
      trip_id: testTrip.id,
    });
    expect(crossed.statusCode, crossed.body).toBe(400);
    expect(crossed.json().error.details).toEqual([expect.objectContaining({ field: 'trip_id' })]);

    const created = expectOk<'createTestInvoice'>(
      await test('POST', '/api/v1/test/invoices/', { amount: '50.00', currency: 'SAR', trip_id: testTrip.id }),
      201,
    ).payment_request;
    const testTripNow = () => test('GET', `/api/v1/trips/${testTrip.id}/`).then((r) => expectOk<'getTrip'>(r).trip);
    expect(await testTripNow()).toMatchObject({
      status: 'pending_payment',
      invoice: { id: created.invoice_id, status: 'pending', amount: '50.00' },
    });

    // The test `paid` books the test trip; the live trip and its invoice stay as they were.
    const testInvoice = (await showInvoice(service, created.invoice_id)).invoice;
    const paid = await notify(service, notificationFor(testInvoice), { 'x-api-key': testKey });
    expect(paid.json()).toEqual({ status: 'success' });
    expect(await testTripNow()).toMatchObject({
      status: 'booked',
      invoice: { id: created.invoice_id, status: 'paid' },
    });
    const liveView = expectOk<'getTrip'>(await live('GET', `/api/v1/trips/${liveTrip.id}/`)).trip;
    expect(liveView).toMatchObject({
      status: 'pending_payment',
      invoice: { id: liveInvoice.id, status: 'pending', amount: '300.00' },
    });
    expect((await service.admin('GET', `/trips/${liveTrip.id}`)).json().trip.invoice.id).toBe(liveInvoice.id);
  });

  it('takes a prompt or trip written without a mode (as release 1.0.0 writes them) for a live one', async () => {
    const { db } = service.context;
    const [prompt] = await db.execute<{ id: string }>(
      sql`insert into suggested_prompts (tenant_id, language, text) values (${tenant.tenant.id}, 'ar', 'قديم') returning id`,
    );
    const [trip] = await db.execute<{ id: string }>(
      sql`insert into trips (tenant_id, title, travelers, destinations, itinerary)
            values (${tenant.tenant.id}, 'Old', '{"adults": 1, "children": 0}', '[]', '[]') returning id`,
    );
    const listed = (api: ApiRequest) =>
      api('GET', `${PROMPTS}?language=ar`).then((r) => expectOk<'listSuggestedPrompts'>(r).prompts.map((p) => p.id));
    expect(await listed(live)).toEqual([prompt.id]);
    expect(await listed(test)).toEqual([]);
    expect(expectOk<'getTrip'>(await live('GET', `/api/v1/trips/${trip.id}/`)).trip.id).toBe(trip.id);
    expectError(await test('GET', `/api/v1/trips/${trip.id}/`), 404, 'NOT_FOUND');
  });
});
