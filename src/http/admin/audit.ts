// The admin host's audit trail: every successful change on the host (any method but GET, HEAD and
// OPTIONS, on any route, present or added later) is recorded before its answer leaves, and
// `GET /admin/v1/audit-events` lists them.
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import {
  type AuditEventInput,
  type AuditEventRow,
  type AuditValue,
  changedFields,
  type FieldChange,
  listAuditEvents,
  recordAuditEvent,
  targetLabel,
  targetValues,
} from '../../audit/index.js';
import type { AppContext } from '../../context.js';
import { type HostApp, listenerUrl } from '../host.js';
import { PagedList, PagingQuery, pagedList, pageFrom, requestPath } from '../paging.js';
import { route } from '../route.js';
import { Nullable, Timestamp, Uuid } from '../schemas.js';
import { AUDITED_ACTIONS, FAILED_SIGN_IN } from './audit-actions.js';

const ChangedValue = Type.Union([Type.String(), Type.Boolean(), Type.Null()]);

export const AuditEvent = Type.Object({
  id: Uuid,
  occurred_at: Timestamp,
  actor: Type.String({
    description: 'The operator (`admin token` for ADMIN_TOKEN), with the console session when made there',
  }),
  action: Type.String({
    description:
      'What was done, named the same whether made through the API or the console, e.g. `tenant.deactivate`; ' +
      'a route without a name is given as its method and route template',
  }),
  summary: Nullable(Type.String({ description: 'The change in words, e.g. `Deactivated tenant Acme Travel`' })),
  route: Nullable(
    Type.String({ description: 'Method and route template it came through, e.g. `PATCH /admin/v1/tenants/:id`' }),
  ),
  target_id: Nullable(Type.String({ description: 'The changed or created resource' })),
  target_type: Nullable(Type.String({ description: '`tenant`, `credential`, `partner_key`, `operator`...' })),
  target_label: Nullable(Type.String({ description: "The target's name when the change was made" })),
  changes: Type.Array(Type.Object({ field: Type.String(), before: ChangedValue, after: ChangedValue }), {
    description: 'The values that changed (URLs without their user, password and query: they may hold secrets)',
  }),
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
    summary: row.summary,
    route: row.route,
    target_id: row.targetId,
    target_type: row.targetType,
    target_label: row.targetLabel,
    changes: (row.changes as FieldChange[] | null) ?? [],
    fields: row.fields,
    status: row.status,
    address: row.address,
    request_id: row.requestId,
    operator: row.operatorName === null ? null : { id: row.operatorId, name: row.operatorName },
  };
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The id of what a console form created (its answer is a page, not JSON), for the audit trail. */
    auditTarget?: string;
    /** The target's values before the change, for the routes that compare them. */
    auditBefore?: Record<string, AuditValue> | null;
    /** Refused, though answered below 400 (a console form sent back with its error): nothing changed. */
    refusedChange?: boolean;
  }
}

/** The actor of a change no authentication named (a sign-in, say). */
const UNAUTHENTICATED = 'unauthenticated';
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The route's `:id` (or its only parameter). */
function namedTarget(request: FastifyRequest): string | null {
  const params = isRecord(request.params) ? request.params : {};
  const named = typeof params.id === 'string' ? params.id : Object.values(params).find((v) => typeof v === 'string');
  return typeof named === 'string' ? named : null;
}

/**
 * The resource a change is about: the route's `:id` (or its only parameter), else what a console
 * form created, else the id of what it created, read from the answer (`{id}` or `{tenant: {id}, ...}`).
 * Only ids are ever taken.
 */
function targetOf(request: FastifyRequest, payload: unknown): string | null {
  const named = namedTarget(request) ?? request.auditTarget;
  if (named) return named;
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

/**
 * The audit event of `request`'s change, answered `status`, on `targetId`: named and worded by
 * AUDITED_ACTIONS when its route is there, the target called `label` (and `changes` made to it).
 */
export function adminChange(
  request: FastifyRequest,
  status: number,
  targetId: string | null,
  label = targetId?.slice(0, 8) ?? '',
  changes: FieldChange[] = [],
): AuditEventInput {
  const route = `${request.method} ${request.routeOptions.url}`;
  const body = isRecord(request.body) ? request.body : {};
  const common = {
    actor: request.adminActor ?? UNAUTHENTICATED,
    route,
    targetId,
    // Field names only: values may be secrets (a URL with a password, say).
    fields: Object.keys(body),
    status,
    address: request.ip,
    requestId: request.id,
    operator: request.adminOperator ? { id: request.adminOperator.id, name: request.adminOperator.name } : null,
  };
  const audited = AUDITED_ACTIONS[route];
  if (!audited) return { ...common, action: route };
  const { action, summary } = audited.describe({ label, changes, body });
  return { ...common, action, summary, targetType: audited.target, targetLabel: audited.target && label, changes };
}

/** adminChange with the target's name and the values changed read from the database. */
async function eventOf(db: AppContext['db'], request: FastifyRequest, status: number, payload: unknown) {
  const targetId = targetOf(request, payload);
  const audited = AUDITED_ACTIONS[`${request.method} ${request.routeOptions.url}`];
  const type = audited?.target;
  const label = (type && targetId && (await targetLabel(db, type, targetId))) || undefined;
  const changes =
    audited?.compare && type && targetId
      ? changedFields(request.auditBefore ?? null, await targetValues(db, type, targetId))
      : [];
  return adminChange(request, status, targetId, label, changes);
}

export function recordAdminChanges(app: HostApp, context: AppContext): void {
  // After validation and the role check: the target as it is before the change, when compared.
  app.addHook('preHandler', async (request) => {
    const route = request.routeOptions.url;
    if (READ_METHODS.has(request.method) || route === undefined) return;
    const audited = AUDITED_ACTIONS[`${request.method} ${route}`];
    const targetId = namedTarget(request);
    if (audited?.compare && audited.target && targetId) {
      request.auditBefore = await targetValues(context.db, audited.target, targetId);
    }
  });
  app.addHook('onSend', async (request, reply, payload) => {
    const route = request.routeOptions.url;
    if (READ_METHODS.has(request.method) || reply.statusCode >= 400 || route === undefined) return payload;
    if (request.refusedChange) return payload;
    if (request.routeOptions.config.auditedInItsTransaction) return payload;
    let event: AuditEventInput | undefined;
    try {
      event = await eventOf(context.db, request, reply.statusCode, payload);
      await recordAuditEvent(context.db, event);
      request.log.info({ audit: event }, 'admin change');
    } catch (error) {
      // The change is made: failing its answer now would only hide that from the operator.
      request.log.error({ err: error, audit: event }, 'admin change not recorded in the audit trail');
    }
    return payload;
  });
}

/**
 * A refused sign-in to the console: where from, and what kind of token was tried (never the
 * token, nor any part of it: a mistyped one is nearly a real secret).
 */
export async function recordFailedSignIn(context: AppContext, request: FastifyRequest, token: string): Promise<void> {
  const tried = token === '' ? 'no token' : token.startsWith('pio_') ? 'an unknown operator token' : 'a wrong token';
  const event = {
    actor: UNAUTHENTICATED,
    action: FAILED_SIGN_IN,
    route: `${request.method} ${request.routeOptions.url}`,
    summary: `Failed sign-in to the console with ${tried}`,
    status: 401,
    address: request.ip,
    requestId: request.id,
  };
  try {
    await recordAuditEvent(context.db, event);
    request.log.warn({ audit: event }, 'console sign-in refused');
  } catch (error) {
    request.log.error({ err: error, audit: event }, 'failed sign-in not recorded in the audit trail');
  }
}

export const adminAuditRoutes = [
  route({
    method: 'GET',
    url: '/audit-events',
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
            description: 'Only this action, e.g. `tenant.deactivate`',
          }),
        ),
        since: Type.Optional(Type.String({ format: 'date-time', description: 'Only changes at or after this time' })),
      }),
      response: { 200: PagedList(AuditEvent) },
    },
    handler: (context) => async (request) => {
      const { target_id: targetId, operator_id: operatorId, action, since } = request.query;
      const page = pageFrom(request.query);
      const filter = { targetId, operatorId, action, since: since === undefined ? undefined : new Date(since) };
      const { count, rows } = await listAuditEvents(context.db, filter, page);
      const filters = Object.fromEntries(
        Object.entries({ target_id: targetId, operator_id: operatorId, action, since }).filter(
          (entry): entry is [string, string] => entry[1] !== undefined,
        ),
      );
      return pagedList(
        listenerUrl(request.server),
        requestPath(request.url),
        filters,
        page,
        count,
        rows.map(auditEventView),
      );
    },
  }),
];
