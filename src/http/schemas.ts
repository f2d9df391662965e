// TypeBox building blocks shared by the hosts' route schemas.
import { type TSchema, Type } from '@sinclair/typebox';

export const Uuid = Type.String({ format: 'uuid', description: 'UUID' });
export const IdParams = Type.Object({ id: Uuid });
export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 with UTC offset' });
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** An OpenAPI security scheme for `Authorization: Api-Key <secret>`. */
export const apiKeyAuthorizationScheme = (description: string) => ({
  type: 'apiKey' as const,
  in: 'header' as const,
  name: 'Authorization',
  description,
});
