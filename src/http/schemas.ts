// TypeBox building blocks shared by the hosts' route schemas.
import { Kind, type Static, type TSchema, Type } from '@sinclair/typebox';
import { ErrorCode } from '../errors.js';
import { MODES, type Mode } from '../tenants/index.js';

export const Uuid = Type.String({ format: 'uuid', description: 'UUID' });
export const IdParams = Type.Object({ id: Uuid });
export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 with UTC offset' });
/** A nullable date as a Timestamp. */
export const isoOrNull = (date: Date | null) => date?.toISOString() ?? null;

/**
 * The schema or null. A schema of one `type` becomes `type: [type, "null"]`, which the response
 * serialiser (fast-json-stringify) handles with a typeof check; an `anyOf` would make it run Ajv
 * on the value of every response (the `format` regexes included).
 */
export function Nullable<T extends TSchema>(schema: T) {
  if (typeof schema.type !== 'string') return Type.Union([schema, Type.Null()]);
  const { [Kind]: _kind, ...keywords } = schema;
  return Type.Unsafe<Static<T> | null>({
    ...keywords,
    type: [schema.type, 'null'],
    ...(Array.isArray(schema.enum) && { enum: [...schema.enum, null] }),
  });
}

/** An object's mode (DECISIONS §11): `live`, or `test`, seen and changed only by test credentials. */
export const ModeSchema = (description: string) => Type.Unsafe<Mode>({ type: 'string', enum: [...MODES], description });

/** An error's stable code, as every host's error body carries it. */
export const ErrorCodeSchema = Type.Unsafe<ErrorCode>({ type: 'string', enum: Object.values(ErrorCode) });

/** `details` of a validation error: one entry per invalid field. */
export const FieldErrorDetails = Type.Array(
  Type.Object({
    field: Type.String({ description: 'Dotted for nested fields, e.g. travelers.adults' }),
    message: Type.String(),
    location: Type.Optional(Type.String({ description: 'body, query, path or header' })),
  }),
  { description: 'On VALIDATION_ERROR: one entry per invalid field' },
);

/** An OpenAPI security scheme for `Authorization: Api-Key <secret>`. */
export const apiKeyAuthorizationScheme = (description: string) => ({
  type: 'apiKey' as const,
  in: 'header' as const,
  name: 'Authorization',
  description,
});
