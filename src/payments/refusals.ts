// Refused payment callbacks of an authenticated tenant, on record for the operator and the partner
// (accepted ones are payment_events). Never on the callback's statement: a refusal is recorded
// after its answer is decided, by a writer of its own that groups what arrives meanwhile into one
// insert on the service's pool, so refusals neither wait for nor slow the notification store. A
// record is not a promise to the partner: when the writer is behind by REFUSALS_WAITING_MAX, more
// refusals are counted and not recorded. The retention prune (src/maintenance/retention.ts) keeps
// them for the configured number of days, and at most REFUSALS_KEPT_PER_TENANT_MODE per tenant and
// mode: with the payload bound, a flood of refused callbacks holds a bounded amount of disk (see
// docs/choices.md), and a flood of test ones never pushes out the live ones.
import { asc, eq, inArray } from 'drizzle-orm';
import type { Executor } from '../db/client.js';
import { invoices, refusedNotifications } from '../db/schema.js';
import type { Mode } from '../tenants/index.js';
import { storableStart } from '../text.js';

export type RefusedNotificationRow = typeof refusedNotifications.$inferSelect;

/** How much of a refused body is kept: an ordinary notification is a few hundred bytes. */
export const REFUSED_PAYLOAD_MAX_BYTES = 16 * 1024;
/** Refusals waiting to be written; more are dropped (and counted) until the writer catches up. */
export const REFUSALS_WAITING_MAX = 5000;
/** Rows in one insert. */
const INSERT_MAX_ROWS = 500;
/** The newest refusals kept per tenant and mode, whatever their age. */
export const REFUSALS_KEPT_PER_TENANT_MODE = 10_000;

export interface Refusal {
  tenantId: string;
  mode: Mode;
  /**
   * The invoice the body names (namedInvoiceId), whatever check refused it: kept on the record
   * when it is one of this tenant's in this mode, so the refusal shows on that invoice.
   */
  invoiceId: string | null;
  httpStatus: number;
  error: string;
  requestId: string;
  /** The body as received (JSON text), or null when none was read. */
  payload: string | null;
}

interface RecorderEvents {
  /** A refusal not recorded: the writer was behind. */
  dropped(): void;
  /** An insert failed (the database is away): its refusals are lost. */
  failed(error: unknown, count: number): void;
}

export class RefusalRecorder {
  private waiting: (typeof refusedNotifications.$inferInsert)[] = [];
  private writing: Promise<void> | null = null;

  constructor(
    private readonly db: Executor,
    private readonly events: RecorderEvents,
  ) {}

  /** Records `refusal` soon, never waiting: the callback's answer does not depend on it. */
  record(refusal: Refusal): void {
    if (this.waiting.length >= REFUSALS_WAITING_MAX) {
      this.events.dropped();
      return;
    }
    const payload = refusal.payload === null ? null : storableStart(refusal.payload, REFUSED_PAYLOAD_MAX_BYTES);
    this.waiting.push({
      tenantId: refusal.tenantId,
      mode: refusal.mode,
      invoiceId: refusal.invoiceId,
      httpStatus: refusal.httpStatus,
      error: refusal.error,
      requestId: refusal.requestId,
      // When it came, not when the writer got to it: the log orders it among accepted ones.
      receivedAt: new Date(),
      payload,
      payloadTruncated: payload !== null && payload.length < (refusal.payload?.length ?? 0),
    });
    // After the current turn, so the refusals of one burst share an insert.
    this.writing ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.write());
  }

  /** Resolves once everything recorded so far is written (or failed). */
  async idle(): Promise<void> {
    while (this.writing) await this.writing;
  }

  private async write(): Promise<void> {
    while (this.waiting.length > 0) {
      const rows = this.waiting.splice(0, INSERT_MAX_ROWS);
      try {
        await this.db.insert(refusedNotifications).values(await this.ownInvoicesOnly(rows));
      } catch (error) {
        this.events.failed(error, rows.length);
      }
    }
    this.writing = null;
  }

  /** `rows` with each invoice that is not its tenant's in its mode (another's, or none) left out. */
  private async ownInvoicesOnly(rows: (typeof refusedNotifications.$inferInsert)[]) {
    const named = [...new Set(rows.flatMap((row) => (row.invoiceId ? [row.invoiceId] : [])))];
    if (named.length === 0) return rows;
    const found = await this.db
      .select({ id: invoices.id, tenantId: invoices.tenantId, mode: invoices.mode })
      .from(invoices)
      .where(inArray(invoices.id, named));
    const owner = new Map(found.map((invoice) => [invoice.id, `${invoice.tenantId} ${invoice.mode}`]));
    return rows.map((row) =>
      row.invoiceId && owner.get(row.invoiceId) !== `${row.tenantId} ${row.mode}` ? { ...row, invoiceId: null } : row,
    );
  }
}

/** The invoice's refused notifications, oldest first. */
export async function listRefusedNotifications(db: Executor, invoiceId: string): Promise<RefusedNotificationRow[]> {
  return db
    .select()
    .from(refusedNotifications)
    .where(eq(refusedNotifications.invoiceId, invoiceId))
    .orderBy(asc(refusedNotifications.receivedAt), asc(refusedNotifications.id));
}
