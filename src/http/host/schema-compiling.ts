// Route validators and serialisers, compiled when a route first uses them (not at start), with
// the host's rules for text: query and path integers in decimal digits, bodies never coerced.
import { AjvCompiler } from '@fastify/ajv-compiler';
import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import type { FastifySchemaCompiler } from 'fastify';
import type { HostApp } from './host-app.js';

/**
 * Query strings and path parameters are text, so they are coerced to the schema's types; JSON
 * bodies are not: a body's `null` or `123` where a boolean or a string belongs is a 400, never a
 * silent `false` or `"123"`. Unknown body fields are refused (schemas say additionalProperties:
 * false), never dropped.
 */
// validateSchema: the route schemas are TypeBox's, fixed at build time; checking each against the
// meta-schema at every start was a large part of the start-up time.
const BODY_AJV_OPTIONS = {
  removeAdditional: false,
  coerceTypes: false,
  useDefaults: true,
  allErrors: true,
  validateSchema: false,
} as const;
const TEXT_AJV_OPTIONS = { ...BODY_AJV_OPTIONS, coerceTypes: 'array' } as const;
/** One pool of Ajv instances for every host of the process. */
const buildFromPool = AjvCompiler();

/** What of an Ajv instance bounding a format needs (Ajv comes with the compiler, not as a dependency of ours). */
type FormatCheck = (text: string) => boolean;
interface AjvFormats {
  formats: Record<string, unknown>;
  addFormat(name: string, check: FormatCheck): unknown;
}

/** The times PostgreSQL takes from a JavaScript date: years 1 to 9999, in UTC. */
const EARLIEST_TIME = Date.parse('0001-01-01T00:00:00Z');
const LATEST_TIME = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * `date-time` and `date` as Ajv's formats read them, and within the database's years:
 * `0001-01-01T00:00:00+14:00` is a valid RFC 3339 time in year 0, which the database refuses (a 500
 * where a 400 belongs).
 */
function boundTimes(ajv: AjvFormats): void {
  for (const format of ['date-time', 'date']) {
    const standard = ajv.formats[format] as FormatCheck | { validate: FormatCheck };
    const isValid = typeof standard === 'function' ? standard : standard.validate;
    ajv.addFormat(format, (text: string) => {
      if (!isValid(text)) return false;
      const time = Date.parse(text);
      return time >= EARLIEST_TIME && time <= LATEST_TIME;
    });
  }
}

/** Fastify's own serialiser compiler (fast-json-stringify). */
const buildSerializers = SerializerSelector();

/** Each host's compilations not yet done, as `compileAllSchemas` runs them. */
const pendingCompilations = new WeakMap<HostApp, Set<() => unknown>>();

/**
 * Validators and serialisers are compiled when a route first uses them, not at start: every route
 * documents a response for each of its statuses, most of them errors seldom sent, and compiling
 * them all was a large part of the start. The host's shared schemas are added before its routes, so
 * they are there whenever a compilation happens.
 */
export function compileSchemasOnFirstUse(app: HostApp): void {
  const pending = new Set<() => unknown>();
  pendingCompilations.set(app, pending);
  /** `compile` once, on first call of the function it gives. */
  const onFirstUse = <T>(compile: () => T): (() => T) => {
    let compiled: { value: T } | undefined;
    const get = () => {
      if (!compiled) {
        compiled = { value: compile() };
        pending.delete(get);
      }
      return compiled.value;
    };
    pending.add(get);
    return get;
  };
  app.setValidatorCompiler((route) => {
    const customOptions = route.httpPart === 'body' ? BODY_AJV_OPTIONS : TEXT_AJV_OPTIONS;
    const validator = onFirstUse(
      () =>
        buildFromPool(app.getSchemas() as Parameters<typeof buildFromPool>[0], {
          customOptions: { ...customOptions },
          onCreate: boundTimes,
        })(route) as ReturnType<FastifySchemaCompiler<unknown>>,
    );
    const integers = route.httpPart === 'body' ? [] : integerFields(route.schema);
    // Fastify reads a failed validation's `errors` from the function it was given.
    const validate: ReturnType<FastifySchemaCompiler<unknown>> = (data) => {
      const notDecimal = integers.length ? notDecimalInteger(data, integers) : null;
      if (notDecimal) {
        validate.errors = [notDecimal];
        return false;
      }
      const result = validator()(data);
      validate.errors = validator().errors;
      return result;
    };
    return validate;
  });
  app.setSerializerCompiler((route) => {
    const serializer = onFirstUse(() => buildSerializers(app.getSchemas(), {})(route as SerializerCompilerRoute));
    return (data) => serializer()(data);
  });
}

/** The integer-typed properties of a query or path schema. */
function integerFields(schema: unknown): string[] {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> } | undefined)?.properties ?? {};
  return Object.keys(properties).filter((name) => properties[name].type === 'integer');
}

const DECIMAL_INTEGER = /^-?[0-9]+$/;
const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);

/**
 * A query or path integer is written in decimal digits and fits a 64-bit integer. Ajv's coercion
 * reads text as JavaScript does (`0x10`, `1e3`, `1.0`, ` 10`) and takes `1e23` for an integer,
 * which the database then refuses: the error, in Ajv's shape, of the first field so written.
 */
function notDecimalInteger(data: unknown, fields: string[]) {
  const values = data as Record<string, unknown> | null;
  for (const field of fields) {
    const value = values?.[field];
    if (typeof value !== 'string') continue;
    const base = { instancePath: `/${field}`, schemaPath: `#/properties/${field}` };
    if (!DECIMAL_INTEGER.test(value)) {
      return { ...base, keyword: 'type', params: { type: 'integer' }, message: 'must be integer' };
    }
    const integer = BigInt(value);
    if (integer > INT64_MAX) {
      return { ...base, keyword: 'maximum', params: { limit: String(INT64_MAX) }, message: `must be <= ${INT64_MAX}` };
    }
    if (integer < INT64_MIN) {
      return { ...base, keyword: 'minimum', params: { limit: String(INT64_MIN) }, message: `must be >= ${INT64_MIN}` };
    }
  }
  return null;
}

/** Compiles every validator and serialiser of a ready host now: a schema that cannot compile throws here. */
export function compileAllSchemas(app: HostApp): number {
  const pending = [...(pendingCompilations.get(app) ?? [])];
  for (const compile of pending) compile();
  return pending.length;
}

type SerializerCompilerRoute = Parameters<ReturnType<ReturnType<typeof SerializerSelector>>>[0];
