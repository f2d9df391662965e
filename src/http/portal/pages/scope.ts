// What every portal page works within: the session's tenant and mode, and pages of one size.
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.js';
import type { ViewScope } from '../../../payments/index.js';

export interface PortalDependencies {
  context: AppContext;
  notifyUrl: string;
}

const PAGE_SIZE = 20;

export const PageNumber = Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 }));

export const pageCount = (count: number) => Math.max(1, Math.ceil(count / PAGE_SIZE));

/** The rows of page `pageNumber` (from 1). */
export const rowsOfPage = (pageNumber: number) => ({ limit: PAGE_SIZE, offset: (pageNumber - 1) * PAGE_SIZE });

/** The session's tenant, in the session's mode only: another's invoice is one that does not exist. */
export function scopeOf(request: FastifyRequest): Required<ViewScope> {
  return { tenantId: request.portalSession.tenantId, mode: request.portalSession.mode };
}
