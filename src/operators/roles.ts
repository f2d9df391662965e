// Operators' roles and what each may do on the admin host. A read-only operator sees everything
// and changes nothing; an operator changes everything but the operators themselves; an admin
// manages operators too. The bootstrap ADMIN_TOKEN is an admin.
import { AppError, ErrorCode } from '../errors.js';

export const OPERATOR_ROLES = ['read-only', 'operator', 'admin'] as const;
export type OperatorRole = (typeof OPERATOR_ROLES)[number];

const RANK: Record<OperatorRole, number> = { 'read-only': 0, operator: 1, admin: 2 };

/** Requests that change nothing: every role may make them. */
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The least role a request needs unless its route says more: read-only to read, operator to change. */
export const requiredRole = (method: string): OperatorRole =>
  READ_METHODS.has(method.toUpperCase()) ? 'read-only' : 'operator';

export const roleAllows = (role: OperatorRole, needed: OperatorRole): boolean => RANK[role] >= RANK[needed];

/** The refusal of a request whose operator's role is below what it needs. */
export const roleRefusal = (role: OperatorRole, needed: OperatorRole): AppError =>
  new AppError(ErrorCode.FORBIDDEN, `Your role (${role}) may not do this: it needs ${needed}.`);

/** The role just below `needed`: the highest that is refused a request needing it. */
export const roleBelow = (needed: OperatorRole): OperatorRole | null => OPERATOR_ROLES[RANK[needed] - 1] ?? null;
