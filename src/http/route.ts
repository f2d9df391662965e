// Routes as data: each route file exports its routes (method, URL, schema, config) and how each
// answers given the context; a host mounts them by scope, with the hooks that scope needs. A
// host's OpenAPI document comes from the same lists on an instance that never answers, so building
// it needs no context and no database.
import swagger, { type FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { TSchema } from '@sinclair/typebox';
import Fastify, {
  type ContextConfigDefault,
  type FastifyContextConfig,
  type FastifySchema,
  type preValidationHookHandler,
  type RawReplyDefaultExpression,
  type RawRequestDefaultExpression,
  type RawServerDefault,
  type RouteGenericInterface,
  type RouteHandlerMethod,
  type RouteOptions,
} from 'fastify';
import type { AppContext } from '../context.js';
import { invalid } from '../errors.js';
import type { HostApp } from './host/host-app.js';
import { BODY_OPTIONAL, type DocumentedRoute, documentSharedErrors } from './openapi.js';

/** A route's handler, its request and reply typed from its TypeBox schema. */
type TypedHandler<S extends FastifySchema> = RouteHandlerMethod<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  RouteGenericInterface,
  ContextConfigDefault,
  S,
  TypeBoxTypeProvider
>;

export interface Route<S extends FastifySchema = FastifySchema>
  extends Partial<Pick<RouteOptions, 'prefixTrailingSlash' | 'validatorCompiler'>> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Relative to the prefix of the scope it is mounted in. */
  url: string;
  schema: S;
  config?: FastifyContextConfig;
  /** How the route answers, given the context: called once, when a host mounts it. */
  handler: (context: AppContext) => TypedHandler<S>;
}

/** A route as data, its handler's request typed from its schema. */
export const route = <const S extends FastifySchema>(declared: Route<S>): Route => declared as unknown as Route;

/** Routes mounted together under one prefix, where a host adds the hooks they need. */
export interface RouteScope {
  prefix: string;
  routes: Route[];
  /** The error responses each route of the scope documents, derived from what it takes. */
  sharedErrors?: (route: DocumentedRoute) => object;
}

/**
 * Mounts `scope`'s routes in a child of `app`, after `guard` (its authentication, ...) and the
 * documentation of its shared errors. Without a context the handlers are never built: the instance
 * is one that only documents.
 */
export async function mountScope(
  app: HostApp,
  { prefix, routes, sharedErrors }: RouteScope,
  context?: AppContext,
  guard?: (scope: HostApp) => void,
): Promise<void> {
  await app.register(
    async (scope) => {
      if (sharedErrors) documentSharedErrors(scope, sharedErrors);
      guard?.(scope);
      for (const { handler, ...options } of routes) {
        const preValidation = bodyRulesOf(options);
        scope.route({
          ...options,
          ...(preValidation.length > 0 && { preValidation }),
          handler: context ? handler(context) : answersNothing,
        });
      }
    },
    { prefix },
  );
}

/**
 * What a route's body is held to beyond its schema: a body of optional fields only (BODY_OPTIONAL)
 * may be left out; a change (PATCH) must name a field.
 */
function bodyRulesOf({ method, schema }: Omit<Route, 'handler'>): preValidationHookHandler[] {
  const rules: preValidationHookHandler[] = [];
  if ((schema as Record<string, unknown>)[BODY_OPTIONAL] === true) rules.push(readAbsentBodyAsEmpty);
  const changeable = method === 'PATCH' ? fieldsOf(schema.body) : [];
  if (changeable.length > 0) rules.push(refuseEmptyChange(changeable));
  return rules;
}

/** The fields a body schema names. */
const fieldsOf = (schema: unknown) => Object.keys((schema as { properties?: object } | undefined)?.properties ?? {});

/** A change (PATCH) that names no field would change nothing, yet be recorded as a change: a 400. */
const refuseEmptyChange =
  (fields: string[]): preValidationHookHandler =>
  (request, _reply, done) => {
    const { body } = request;
    const empty = body == null || (typeof body === 'object' && !Array.isArray(body) && Object.keys(body).length === 0);
    const message = `must have at least one of ${fields.join(', ')}`;
    done(empty ? invalid([{ field: '(root)', message, location: 'body' }]) : undefined);
  };

/** A body of optional fields only, left out, is read as `{}`. */
const readAbsentBodyAsEmpty: preValidationHookHandler = (request, _reply, done) => {
  request.body ??= {};
  done();
};

const answersNothing = () => {
  throw new Error('a route of a documenting instance was called');
};

/** What a host documents: its document's options, the schemas its routes share, its scopes in mounting order. */
export interface DocumentedHost {
  swagger: FastifyDynamicSwaggerOptions;
  /** Components of the document, `$ref`s in the routes. */
  sharedSchemas?: TSchema[];
  /** Where the host serves its document. */
  documentPath: string;
  scopes: RouteScope[];
}

/** The document's options and shared schemas, and its route: before the routes, so @fastify/swagger sees them. */
export async function registerDocument(app: HostApp, host: DocumentedHost): Promise<void> {
  for (const schema of host.sharedSchemas ?? []) app.addSchema(schema);
  await app.register(swagger, host.swagger);
  app.get(host.documentPath, { schema: { hide: true } }, async () => app.swagger());
}

/** A host's OpenAPI document, from its route lists, on an instance that never listens nor answers. */
export async function documentFromRoutes(host: DocumentedHost): Promise<unknown> {
  const app = Fastify({ routerOptions: { ignoreTrailingSlash: true } }).withTypeProvider<TypeBoxTypeProvider>();
  // Nothing is validated or serialised here: compiling the schemas would only cost time.
  app.setValidatorCompiler(() => () => true);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  try {
    await registerDocument(app, host);
    for (const scope of host.scopes) await mountScope(app, scope);
    await app.ready();
    return app.swagger();
  } finally {
    await app.close();
  }
}
