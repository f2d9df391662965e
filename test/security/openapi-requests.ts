// Valid-looking requests made from an OpenAPI document, for the sweeps that walk every route of a
// host (input-sweep, mode-sweep): a sample value for any schema, a value of one's choosing for the
// fields named in `known`.
import { randomBytes, randomUUID } from 'node:crypto';
import type { Json } from '../../src/http/openapi.js';

/** A part of an OpenAPI document: a schema, an operation, a parameter. */
export type Schema = Json;

/** The schema a `$ref` names in the document, or the schema itself. */
export function resolve(document: Schema, schema: Schema | undefined): Schema | undefined {
  if (!schema?.$ref) return schema;
  const name = String(schema.$ref).split('/').pop()!;
  return (
    document.components?.schemas?.[name] ??
    Object.values<Schema>(document.components?.schemas ?? {}).find((candidate) => candidate.$id === name)
  );
}

/** Values of fields whose schema alone does not say what a valid one is. */
const FIELD_VALUES: Record<string, () => unknown> = {
  slug: () => `sweep-${randomBytes(4).toString('hex')}`,
  gateway: () => 'tap',
  currency: () => 'SAR',
  amount: () => '10.00',
  time: () => '09:00',
};
const FORMAT_VALUES: Record<string, () => string> = {
  uuid: () => randomUUID(),
  uri: () => 'https://example.com/sweep',
  date: () => '2027-01-10',
};

/** A valid-looking value for a schema: a known field's, else from its enum, format or type. */
export function sample(
  document: Schema,
  raw: Schema | undefined,
  field: string,
  known: Record<string, unknown>,
): unknown {
  const schema = resolve(document, raw) ?? {};
  if (field in known) return known[field];
  if (FIELD_VALUES[field]) return FIELD_VALUES[field]();
  if (schema.anyOf)
    return sample(
      document,
      schema.anyOf.find((option: Schema) => option.type !== 'null'),
      field,
      known,
    );
  if (schema.enum) return schema.enum[0];
  if (schema.const !== undefined) return schema.const;
  return sampleOfType(document, schema, field, known);
}

function sampleOfType(document: Schema, schema: Schema, field: string, known: Record<string, unknown>): unknown {
  switch ([schema.type].flat().find((type) => type !== 'null')) {
    case 'object':
      return Object.fromEntries(
        (schema.required ?? []).map((name: string) => [name, sample(document, schema.properties?.[name], name, known)]),
      );
    case 'array':
      return schema.minItems ? [sample(document, schema.items, field, known)] : [];
    case 'integer':
    case 'number':
      return schema.minimum ?? 1;
    case 'boolean':
      return true;
    default:
      return FORMAT_VALUES[schema.format]?.() ?? `Sweep ${randomBytes(3).toString('hex')}`;
  }
}

/** The JSON body schema of an operation, if it takes one. */
export const bodySchemaOf = (operation: Schema): Schema | undefined =>
  operation.requestBody?.content?.['application/json']?.schema;
