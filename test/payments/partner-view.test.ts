// What a partner reads of its payment requests while the worker records attempts.
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { invoices, paymentDeliveries } from '../../src/db/schema.js';
import { createInvoice, getPaymentRequest, invoiceHistory, listPaymentRequests } from '../../src/payments/index.js';
import { useTenant, useTestContext } from '../support/apps.js';

describe('a payment request read while attempts are recorded', () => {
  const opened = useTestContext();
  const tenant = useTenant(opened);

  it('never shows an attempt without the payment_url stored with it, to partners or operators', async () => {
    const { database, db, paymentQueue } = opened.context;
    const { invoice } = await createInvoice(database, paymentQueue, {
      tenant_id: tenant.tenant.id,
      amount: '10.00',
      currency: 'SAR',
    });
    const scope = { tenantId: tenant.tenant.id };
    // Its first attempt is on record already: the tenant has no endpoint, and no payment_url came.
    const recorded = (await getPaymentRequest(db, scope, invoice.id)).deliveries.length;
    const urlOf = (attempt: number) => `https://pay.example/${attempt}`;
    const attempts = recorded + 40;
    // Each attempt and its payment_url commit together, as the worker records them.
    const record = async () => {
      for (let attempt = recorded + 1; attempt <= attempts; attempt++) {
        await db.transaction(async (tx) => {
          await tx.insert(paymentDeliveries).values({ invoiceId: invoice.id, attempt, httpStatus: 200, latencyMs: 1 });
          await tx
            .update(invoices)
            .set({ paymentUrl: urlOf(attempt) })
            .where(eq(invoices.id, invoice.id));
        });
      }
    };
    const seen: string[] = [];
    const read = async (recording: Promise<void>) => {
      let done = false;
      void recording.finally(() => {
        done = true;
      });
      while (!done) {
        const one = await getPaymentRequest(db, scope, invoice.id);
        const [listed] = (await listPaymentRequests(db, scope, {}, { limit: 1, offset: 0 })).rows;
        const operators = await invoiceHistory(db, invoice.id);
        for (const { invoice: read, deliveries } of [one, listed, operators]) {
          const shown = deliveries.length === recorded ? null : urlOf(deliveries.length);
          if (read.paymentUrl !== shown) seen.push(`${deliveries.length} attempts with ${read.paymentUrl}`);
        }
      }
    };
    const recording = record();
    await Promise.all([recording, read(recording), read(recording)]);
    expect(seen).toEqual([]);
    expect((await getPaymentRequest(db, scope, invoice.id)).deliveries).toHaveLength(attempts);
  });
});
