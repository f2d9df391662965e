// Named operators on the admin host: who a request comes from (the bootstrap ADMIN_TOKEN or an
// operator's token, resolved once per request), what their role lets them do (checked for every
// route of the host, the console's included, before the body is even read), and the admin
// routes that manage operators.
import { createHash, timingSafeEqual } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { AppError, ErrorCode } from '../../errors.js';
import {
  BOOTSTRAP_ADMIN,
  createOperator,
  deleteOperator,
  listOperators,
  OPERATOR_ROLES,
  type Operator,
  type OperatorRole,
  type OperatorRow,
  requiredRole,
  resolveOperatorToken,
  roleAllows,
  roleRefusal,
  updateOperator,
} from '../../operators/index.js';
import { authenticator, type CredentialCheck } from '../authentication.js';
import type { HostApp } from '../host.js';
import type { RateLimitGuard } from '../rate-limit.js';
import { route } from '../route.js';
import { IdParams, Uuid } from '../schemas.js';
import { conflictResponse } from './error-responses.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The operator an authenticated admin or console request comes from. */
    adminOperator?: Operator;
  }
  interface FastifyContextConfig {
    /** The least role this route needs, when not the default (read-only reads, operator changes). */
    operatorRole?: OperatorRole;
  }
  interface FastifyInstance {
    /** Every route of the host with the role it needs: what the role check enforces, listed. */
    adminRoutes: { method: string; url: string; role: OperatorRole }[];
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Who made an authenticated admin request, for the audit trail: the operator's name (with the console session). */
    adminActor?: string;
  }
}

const sha256 = (text: string) => createHash('sha256').update(text).digest();

/** The digest of ADMIN_TOKEN: compared in constant time, and the root of the console's cookie key. */
export const adminTokenDigest = (context: AppContext) => sha256(context.config.adminToken);

/** The operator a token names: ADMIN_TOKEN is the bootstrap admin, else a named operator's token; null for none. */
export function operatorOfToken(context: AppContext): (token: string) => Promise<Operator | null> {
  const expected = adminTokenDigest(context);
  return async (token) =>
    timingSafeEqual(sha256(token), expected)
      ? BOOTSTRAP_ADMIN
      : resolveOperatorToken(context.db, context.caches, token);
}

const BEARER = /^bearer ([!-~]+)$/i;

/** The admin API's authenticator: exactly `Bearer <token>` (anything after the token makes the header invalid). */
export function authenticateOperator(context: AppContext, limits: RateLimitGuard) {
  const operatorOf = operatorOfToken(context);
  const check: CredentialCheck<Operator> = {
    lookUp: (request) => operatorOf(BEARER.exec(request.headers.authorization ?? '')?.[1] ?? ''),
    refusal: () => new AppError(ErrorCode.UNAUTHORIZED),
    accept(request, operator) {
      request.adminOperator = operator;
      request.adminActor = operator.name;
      return undefined;
    },
  };
  return authenticator(limits, check);
}

const methodsOf = (method: string | string[]) => (Array.isArray(method) ? method : [method]);

/**
 * Records each route's role and refuses, before parsing, a request whose operator's role is below
 * it. Requests without an operator (sign-in, assets) are left to their routes' own checks.
 */
export function enforceRoles(app: HostApp): void {
  app.decorate('adminRoutes', []);
  app.addHook('onRoute', (route) => {
    for (const method of methodsOf(route.method)) {
      app.adminRoutes.push({ method, url: route.url, role: route.config?.operatorRole ?? requiredRole(method) });
    }
  });
  app.addHook('preParsing', async (request: FastifyRequest) => {
    const operator = request.adminOperator;
    if (!operator) return;
    const needed = request.routeOptions.config.operatorRole ?? requiredRole(request.method);
    if (!roleAllows(operator.role, needed)) throw roleRefusal(operator.role, needed);
  });
}

const OperatorName = Type.String({ minLength: 1, maxLength: 100 });
const Role = Type.Union(
  OPERATOR_ROLES.map((role) => Type.Literal(role)),
  { description: 'read-only: sees everything, changes nothing; operator: all but operators; admin: all' },
);
export const NewOperatorBody = Type.Object({ name: OperatorName, role: Role }, { additionalProperties: false });
export const OperatorChangesBody = Type.Object(
  { name: Type.Optional(OperatorName), role: Type.Optional(Role) },
  { additionalProperties: false },
);
const OperatorShape = Type.Object({
  id: Uuid,
  name: Type.String(),
  role: Role,
  token_hint: Type.String({ description: "The token's prefix and last four characters" }),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});

export const operatorView = (row: OperatorRow) => ({
  id: row.id,
  name: row.name,
  role: row.role as OperatorRole,
  token_hint: row.hint,
  created_at: row.createdAt.toISOString(),
  updated_at: row.updatedAt.toISOString(),
});

const nameConflict = conflictResponse({ 'name taken': 'An operator named "Alice" exists already.' });
/** Managing operators is an admin's: an operator could otherwise make themselves one. */
const config = { operatorRole: 'admin' as const };

const tags = ['operators'];

export const adminOperatorRoutes = [
  route({
    method: 'POST',
    url: '/operators',
    config,
    schema: {
      operationId: 'createOperator',
      tags,
      summary: 'Name an operator with a role; their token is shown once',
      body: NewOperatorBody,
      response: { 201: Type.Object({ operator: OperatorShape, token: Type.String() }), 409: nameConflict },
    },
    handler: (context) => async (request, reply) => {
      const { operator, token } = await createOperator(context.db, request.body);
      return reply.code(201).send({ operator: operatorView(operator), token });
    },
  }),

  route({
    method: 'GET',
    url: '/operators',
    schema: {
      operationId: 'listOperators',
      tags,
      summary: 'Operators not deleted, oldest first',
      response: { 200: Type.Object({ operators: Type.Array(OperatorShape) }) },
    },
    handler: (context) => async () => ({ operators: (await listOperators(context.db)).map(operatorView) }),
  }),

  route({
    method: 'PATCH',
    url: '/operators/:id',
    config: { ...config, resource: 'Operator' },
    schema: {
      operationId: 'updateOperator',
      tags,
      summary: 'Rename an operator or change their role (effective on their next request)',
      params: IdParams,
      body: OperatorChangesBody,
      response: { 200: Type.Object({ operator: OperatorShape }), 409: nameConflict },
    },
    handler: (context) => async (request) => ({
      operator: operatorView(await updateOperator(context.db, context.caches, request.params.id, request.body)),
    }),
  }),

  route({
    method: 'DELETE',
    url: '/operators/:id',
    config: { ...config, resource: 'Operator' },
    schema: {
      operationId: 'deleteOperator',
      tags,
      summary: 'Delete an operator: their token and console sessions stop at once',
      params: IdParams,
      response: { 200: Type.Object({ operator: OperatorShape }) },
    },
    handler: (context) => async (request) => ({
      operator: operatorView(await deleteOperator(context.db, context.caches, request.params.id)),
    }),
  }),
];
