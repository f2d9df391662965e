// The admin host's audit trail: every successful change on the host (any method but GET, HEAD and
// OPTIONS, on any route, present or added later) is recorded before its answer leaves, and
// `GET /admin/v1/audit-events` lists them.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { type AuditEventInput, type AuditEventRow, listAuditEvents, recordAuditEvent } from '../../audit/index.js';
import type { AppContext } from '../../context.js';
import { type HostApp, listenerUrl } from '../host.js';
import { PagedList, PagingQuery, pagedList, pageFrom, requestPath } from '../paging.js';
import { Nullable, Timestamp, Uuid } from '../schemas.js';

export const AuditEvent = Type.Object({
  id: Uuid,
  occurred_at: Timestamp,
  actor: Type.String({
    description: 'The operator (`admin token` for ADMIN_TOKEN), with the console session when made there',
  }),
  action: Type.String({ description: 'Method and route template, e.g. `PATCH /admin/v1/tenants/:id`' }),
  target_id: Nullable(Type.String({ description: 'The changed or created resource' })),
  fields: Type.Array(Type.String(), { description: 'Names of the fields sent (never their values)' }),
  status: Nullable(Type.Integer({ description: 'HTTP status answered; null for partnerctl commands' })),
  address: Nullable(Type.String({ description: "The client's address" })),
  request_id: Nullable(Type.String()),
  operator: Nullable(
    Type.Object(
      {
        id: Nullable(Type.String({ format: 'uuid', description: 'null: the bootstrap ADMIN_TOKEN' })),
        name: Type.String({ description: "The operator's name when the change was made" }),
      },
      { description: 'Who made the change; null for changes made before operators were named' },
    ),
  ),
});

export function auditEventView(row: AuditEventRow): Static<typeof AuditEvent> {
  return {
    id: row.id,
    occurred_at: row.occurredAt.toISOString(),
    actor: row.actor,
    action: row.action,
    target_id: row.targetId,
    fields: row.fields,
    status: row.status,
    address: row.address,
    request_id: row.requestId,
    operator: row.operatorName === null ? null : { id: row.operatorId, name: row.operatorName },
  };
}

/** The actor of a change no authentication named (a sign-in, say). */
const UNAUTHENTICATED = 'unauthenticated';
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The resource a change is about: the route's `:id` (or its only parameter), else the id of what
 * it created, read from the answer (`{id}` or `{tenant: {id}, ...}`). Only ids are ever taken.
 */
function targetOf(request: FastifyRequest, payload: unknown): string | null {
  const params = isRecord(request.params) ? request.params : {};
  const named = typeof params.id === 'string' ? params.id : Object.values(params).find((v) => typeof v === 'string');
  if (typeof named === 'string') return named;
  if (typeof payload !== 'string') return null;
  let body: unknown;
  try {
    body = JSON.parse(payload);
  } catch {
    return null;
  }
  if (!isRecord(body)) return null;
  if (typeof body.id === 'string') return body.id;
  const created = Object.values(body).find((value) => isRecord(value) && typeof value.id === 'string');
  return created ? ((created as Record<string, unknown>).id as string) : null;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route records its change itself, in the transaction that makes it (`adminChange`). */
    auditedInItsTransaction?: boolean;
  }
}

/** The audit event of `request`'s change, answered `status`, on `targetId`. */
export function adminChange(request: FastifyRequest, status: number, targetId: string | null): AuditEventInput {
  return {
    actor: request.adminActor ?? UNAUTHENTICATED,
    action: `${request.method} ${request.routeOptions.url}`,
    targetId,
    // Field names only: values may be secrets (a URL with a password, say).
    fields: isRecord(request.body) ? Object.keys(request.body) : [],
    status,
    address: request.ip,
    requestId: request.id,
    operator: request.adminOperator ? { id: request.adminOperator.id, name: request.adminOperator.name } : null,
  };
}

export function recordAdminChanges(app: HostApp, context: AppContext): void {
  app.addHook('onSend', async (request, reply, payload) => {
    const route = request.routeOptions.url;
    if (READ_METHODS.has(request.method) || reply.statusCode >= 400 || route === undefined) return payload;
    if (request.routeOptions.config.auditedInItsTransaction) return payload;
    const event = adminChange(request, reply.statusCode, targetOf(request, payload));
    try {
      await recordAuditEvent(context.db, event);
      request.log.info({ audit: event }, 'admin change');
    } catch (error) {
      // The change is made: failing its answer now would only hide that from the operator.
      request.log.error({ err: error, audit: event }, 'admin change not recorded in the audit trail');
    }
    return payload;
  });
}

export const adminAuditRoutes: FastifyPluginAsyncTypebox<{ context: AppContext }> = async (app, { context }) => {
  app.get(
    '/audit-events',
    {
      schema: {
        operationId: 'listAuditEvents',
        tags: ['audit'],
        summary: "Operators' changes, newest first",
        querystring: Type.Object({
          ...PagingQuery,
          target_id: Type.Optional(
            Type.String({ minLength: 1, maxLength: 200, description: 'Only changes to this resource' }),
          ),
          operator_id: Type.Optional(Type.String({ format: 'uuid', description: "Only this operator's changes" })),
          action: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: 200,
              description: 'Only this action, e.g. `PATCH /admin/v1/tenants/:id`',
            }),
          ),
          since: Type.Optional(Type.String({ format: 'date-time', description: 'Only changes at or after this time' })),
        }),
        response: { 200: PagedList(AuditEvent) },
      },
    },
    async (request) => {
      const { target_id: targetId, operator_id: operatorId, action, since } = request.query;
      const page = pageFrom(request.query);
      const filter = { targetId, operatorId, action, since: since === undefined ? undefined : new Date(since) };
      const { count, rows } = await listAuditEvents(context.db, filter, page);
      const filters = Object.fromEntries(
        Object.entries({ target_id: targetId, operator_id: operatorId, action, since }).filter(
          (entry): entry is [string, string] => entry[1] !== undefined,
        ),
      );
      return pagedList(listenerUrl(app), requestPath(request.url), filters, page, count, rows.map(auditEventView));
    },
  );
};
