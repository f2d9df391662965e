// JSON bodies are validated without type coercion: the host's Ajv coerces (`coerceTypes: 'array'`),
// which suits query strings and path parameters, all text, but would turn a body's `null` into
// `false`/`0`/`""` and `123` into `"123"`. A body field of the wrong JSON type is a 400 here.
import { AjvCompiler } from '@fastify/ajv-compiler';
import type { FastifyInstance } from 'fastify';

/** Options of the host's Ajv (src/http/host.ts), less coercion. */
const BODY_AJV_OPTIONS = { removeAdditional: false, coerceTypes: false, useDefaults: true, allErrors: true } as const;
const OTHER_AJV_OPTIONS = { ...BODY_AJV_OPTIONS, coerceTypes: 'array' } as const;

/** Sets the scope's validator compiler: strict for bodies, as the host for query, params and headers. */
export function validateBodiesStrictly(scope: FastifyInstance<any, any, any, any, any>): void {
  const buildFromPool = AjvCompiler();
  scope.setValidatorCompiler((route) => {
    const customOptions = route.httpPart === 'body' ? BODY_AJV_OPTIONS : OTHER_AJV_OPTIONS;
    return buildFromPool(scope.getSchemas() as Parameters<typeof buildFromPool>[0], { customOptions: { ...customOptions } })(route);
  });
}
