// Named operators on the admin host: who a request comes from (the bootstrap ADMIN_TOKEN or an
// operator's token, resolved once per request), what their role lets them do (checked for every
// route of the host, the console's included, before the body is even read), and the admin
// routes that manage operators.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { AppError, ErrorCode } from '../../errors.js';
import {
  createOperator,
  deleteOperator,
  listOperators,
  OPERATOR_ROLES,
  type Operator,
  type OperatorRole,
  type OperatorRow,
  requiredRole,
  roleAllows,
  updateOperator,
} from '../../operators/index.js';
import type { HostApp } from '../host.js';
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
    if (!roleAllows(operator.role, needed)) {
      throw new AppError(ErrorCode.FORBIDDEN, `Your role (${operator.role}) may not do this: it needs ${needed}.`);
    }
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

export const adminOperatorRoutes: FastifyPluginAsyncTypebox<{ context: AppContext }> = async (app, { context }) => {
  const { db, caches } = context;
  const tags = ['operators'];

  app.post(
    '/operators',
    {
      config,
      schema: {
        operationId: 'createOperator',
        tags,
        summary: 'Name an operator with a role; their token is shown once',
        body: NewOperatorBody,
        response: { 201: Type.Object({ operator: OperatorShape, token: Type.String() }), 409: nameConflict },
      },
    },
    async (request, reply) => {
      const { operator, token } = await createOperator(db, request.body);
      return reply.code(201).send({ operator: operatorView(operator), token });
    },
  );

  app.get(
    '/operators',
    {
      schema: {
        operationId: 'listOperators',
        tags,
        summary: 'Operators not deleted, oldest first',
        response: { 200: Type.Object({ operators: Type.Array(OperatorShape) }) },
      },
    },
    async () => ({ operators: (await listOperators(db)).map(operatorView) }),
  );

  app.patch(
    '/operators/:id',
    {
      config,
      schema: {
        operationId: 'updateOperator',
        tags,
        summary: 'Rename an operator or change their role (effective on their next request)',
        params: IdParams,
        body: OperatorChangesBody,
        response: { 200: Type.Object({ operator: OperatorShape }), 409: nameConflict },
      },
    },
    async (request) => ({ operator: operatorView(await updateOperator(db, caches, request.params.id, request.body)) }),
  );

  app.delete(
    '/operators/:id',
    {
      config,
      schema: {
        operationId: 'deleteOperator',
        tags,
        summary: 'Delete an operator: their token and console sessions stop at once',
        params: IdParams,
        response: { 200: Type.Object({ operator: OperatorShape }) },
      },
    },
    async (request) => ({ operator: operatorView(await deleteOperator(db, caches, request.params.id)) }),
  );
};
