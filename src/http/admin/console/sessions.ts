// Console sessions: the admin token is presented once and exchanged for a random session token in
// a signed, HttpOnly cookie; the database keeps only the token's digest and expiry, so signing out
// ends the session everywhere. The CSRF token is derived from the session token, never stored.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { and, eq, gt, lte } from 'drizzle-orm';
import type { Executor } from '../../../db/client.js';
import { consoleSessions } from '../../../db/schema.js';
import { BOOTSTRAP_ADMIN, liveOperator, type Operator } from '../../../operators/index.js';
import { csrfTokenOf } from '../../pages/protection.js';

export const SESSION_HOURS = 12;

const digest = (token: string) => createHash('sha256').update(token).digest('hex');

/** `console session <first 8 of the id>`, after the operator's name when a named operator signed in. */
function actorOf(sessionId: string, operator: Operator): string {
  const session = `console session ${sessionId.slice(0, 8)}`;
  return operator.id === null ? session : `${operator.name} (${session})`;
}

export interface ConsoleSession {
  id: string;
  /** Who did it, for logs and the audit trail. */
  actor: string;
  /** Who signed in: a named operator, or the bootstrap admin token. */
  operator: Operator;
  csrfToken: string;
}

export class ConsoleSessions {
  private readonly csrfKey: Buffer;

  /** `key` (derived from the admin token) also signs the cookie: a new admin token ends every session. */
  constructor(
    private readonly db: Executor,
    key: Buffer,
  ) {
    this.csrfKey = createHmac('sha256', key).update('console csrf').digest();
  }

  /** Starts a session of `operator`: the token for the cookie, and who it is. Expired sessions are swept meanwhile. */
  async start(operator: Operator, now = new Date()): Promise<{ token: string; actor: string }> {
    await this.db.delete(consoleSessions).where(lte(consoleSessions.expiresAt, now));
    const token = randomBytes(32).toString('base64url');
    const [row] = await this.db
      .insert(consoleSessions)
      .values({
        digest: digest(token),
        expiresAt: new Date(now.getTime() + SESSION_HOURS * 3600_000),
        operatorId: operator.id,
      })
      .returning({ id: consoleSessions.id });
    return { token, actor: actorOf(row.id, operator) };
  }

  async find(token: string | undefined, now = new Date()): Promise<ConsoleSession | null> {
    if (!token || token.length > 100) return null;
    const [row] = await this.db
      .select({ id: consoleSessions.id, operatorId: consoleSessions.operatorId })
      .from(consoleSessions)
      .where(and(eq(consoleSessions.digest, digest(token)), gt(consoleSessions.expiresAt, now)));
    if (!row) return null;
    // Read on every request: a deleted operator's sessions end at once, a new role applies at once.
    const operator = row.operatorId === null ? BOOTSTRAP_ADMIN : await liveOperator(this.db, row.operatorId);
    if (!operator) return null;
    return { id: row.id, actor: actorOf(row.id, operator), operator, csrfToken: csrfTokenOf(this.csrfKey, token) };
  }

  async end(token: string): Promise<void> {
    await this.db.delete(consoleSessions).where(eq(consoleSessions.digest, digest(token)));
  }
}
