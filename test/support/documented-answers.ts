// Every answer a test gets in process is checked against the OpenAPI document its host publishes:
// the status must be documented for the operation, the Content-Type must be one of that status's
// media types, the JSON body and the documented headers must fit their schemas (checked by
// openapi-backend, on Ajv's 2020-12 dialect, which OpenAPI 3.1 schemas use, with its formats), and
// any header beyond those of every answer must be documented. A request outside the document
// (pages, probes, an unknown path, a path that does not decode) is not checked.
import { Ajv2020 } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { OpenAPIBackend, type Operation } from 'openapi-backend';
import type { ListenerName } from '../../src/config.js';
import type { HostApp } from '../../src/http/host.js';

/** Where each host publishes its document (the portal publishes none). */
const DOCUMENT_PATHS: Partial<Record<ListenerName, string>> = {
  integrations: '/api/v1/openapi.json',
  backend: '/v1/openapi.json',
  admin: '/admin/v1/openapi.json',
};

// Documents compiled once per text: the apps of a test worker serve the same few documents.
const compiled = new Map<string, Promise<OpenAPIBackend>>();

export function compileDocument(text: string): Promise<OpenAPIBackend> {
  let api = compiled.get(text);
  if (!api) {
    // One Ajv for each set of options the library asks for (headers coerce their text): an Ajv
    // made for each operation it compiles would cost more than the checks.
    const ajvs = new Map<string, Ajv2020>();
    const ajvFor = (options: object) => {
      const key = JSON.stringify(options);
      const ajv = ajvs.get(key) ?? ajvFormats.default(new Ajv2020({ ...options, strict: false, allErrors: true }));
      ajvs.set(key, ajv);
      return ajv;
    };
    const backend = new OpenAPIBackend({
      definition: JSON.parse(text),
      strict: true,
      // The documents are checked as OpenAPI 3.1 by test/http/openapi/lint.test.ts; this library's
      // own check knows 3.0 only. Quick also compiles each operation's validators on first use.
      quick: true,
      // The hosts ignore a trailing slash, and their documents spell paths with one.
      ignoreTrailingSlashes: false,
      // OpenAPI 3.1 schemas are JSON Schema 2020-12 (`prefixItems`, `const`, type lists).
      customizeAjv: (_ajv, options) => ajvFor(options),
    });
    api = backend.init();
    compiled.set(text, api);
  }
  return api;
}

interface Answer {
  method: string;
  url: string;
  response: LightMyRequestResponse;
}

type ResponseObject = {
  content?: Record<string, { schema?: object }>;
  headers?: Record<string, { required?: boolean }>;
};

const decodes = (path: string) => {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
};

const mediaType = (contentType: string | undefined) => contentType?.split(';')[0].trim().toLowerCase();

/** The documented response an operation gives `status`: by code, by class (`4XX`), or the default. */
function documentedResponse(operation: Operation, status: number): ResponseObject | undefined {
  const responses = (operation.responses ?? {}) as Record<string, ResponseObject>;
  return responses[status] ?? responses[`${String(status)[0]}XX`] ?? responses.default;
}

/** What is wrong with the answer's media type against the documented response's. */
function contentMismatch(documented: ResponseObject, { method, response }: Answer): string | null {
  const sent = mediaType(response.headers['content-type'] as string | undefined);
  const mediaTypes = Object.keys(documented.content ?? {});
  if (method === 'HEAD') return null;
  if (response.rawPayload.length === 0) {
    return mediaTypes.length > 0 ? `no body, where the document gives ${mediaTypes.join(', ')}` : null;
  }
  if (!sent) return `a body without a Content-Type (documented: ${mediaTypes.join(', ')})`;
  if (!mediaTypes.some((documentedType) => matches(documentedType, sent))) {
    return `Content-Type ${sent} is not documented (documented: ${mediaTypes.join(', ') || 'no body'})`;
  }
  return null;
}

/**
 * Headers of every answer of every host, whatever the operation: transport, the request id, and the
 * browser-hardening set no API client acts on. Any other header an answer carries must be among
 * its documented response's.
 */
const EVERY_ANSWER_HEADERS = new Set([
  'connection',
  'content-length',
  'content-type',
  'date',
  'keep-alive',
  'transfer-encoding',
  'x-request-id',
  'cross-origin-opener-policy',
  'cross-origin-resource-policy',
  'origin-agent-cluster',
  'referrer-policy',
  'strict-transport-security',
  'x-content-type-options',
  'x-dns-prefetch-control',
  'x-download-options',
  'x-frame-options',
  'x-permitted-cross-domain-policies',
  'x-xss-protection',
]);

/** What in the answer's JSON body and headers does not fit the documented schemas. */
function schemaProblems(api: OpenAPIBackend, operation: Operation, documented: ResponseObject, answer: Answer) {
  const { response } = answer;
  const status = response.statusCode;
  const problems: string[] = [];
  if (answer.method !== 'HEAD' && mediaType(response.headers['content-type'] as string) === 'application/json') {
    const result = api.validator.validateResponse(JSON.parse(response.payload), operation, status);
    for (const error of result.errors ?? []) problems.push(`body${error.instancePath} ${error.message}`);
  }
  const headers = api.validator.validateResponseHeaders(response.headers, operation, { statusCode: status });
  for (const error of headers.errors ?? []) problems.push(`header ${error.instancePath} ${error.message}`);
  const documentedHeaders = Object.keys(documented.headers ?? {}).map((header) => header.toLowerCase());
  for (const [header, object] of Object.entries(documented.headers ?? {})) {
    if (object.required && response.headers[header.toLowerCase()] === undefined) problems.push(`no ${header} header`);
  }
  for (const header of Object.keys(response.headers)) {
    if (!EVERY_ANSWER_HEADERS.has(header) && !documentedHeaders.includes(header)) {
      problems.push(`header ${header} is not documented`);
    }
  }
  return problems;
}

/** What is wrong with `answer` against `api`'s document, or nothing when it fits (or is not in it). */
export function mismatchOf(api: OpenAPIBackend, answer: Answer): string | null {
  const { method, url, response } = answer;
  const [path] = url.split('?');
  // A path that does not decode never reaches a route: the host refuses it before routing.
  if (!decodes(path)) return null;
  const operationAt = (candidate: string) => api.router.matchOperation({ method, path: candidate, headers: {} });
  // The hosts ignore a trailing slash: so does the match.
  const operation = operationAt(path) ?? operationAt(path.endsWith('/') ? path.slice(0, -1) : `${path}/`);
  if (!operation) return null;
  const status = response.statusCode;
  const where = `${operation.operationId ?? `${method} ${operation.path}`} answered ${status} to ${method} ${url}`;
  const documented = documentedResponse(operation, status);
  if (!documented) {
    return `${where}: the document lists no ${status} (it lists ${Object.keys(operation.responses ?? {}).join(', ')})`;
  }
  const mismatch = contentMismatch(documented, answer);
  if (mismatch) return `${where}: ${mismatch}`;
  const problems = schemaProblems(api, operation, documented, answer);
  return problems.length > 0 ? `${where}: ${problems.join('; ')}` : null;
}

const matches = (documented: string, sent: string) =>
  documented === sent ||
  (documented.endsWith('/*') && sent.startsWith(documented.slice(0, -1))) ||
  documented === '*/*';

/**
 * Makes `app.inject` check each answer against the document the host publishes, failing with the
 * operation, the status and the mismatch. The document is read from the host itself on first use.
 */
export function checkAnswersAgainstDocument(app: HostApp, listener: ListenerName): void {
  const documentPath = DOCUMENT_PATHS[listener];
  if (!documentPath) return;
  const inject = app.inject.bind(app);
  let api: Promise<OpenAPIBackend> | undefined;
  const documented = () =>
    (api ??= inject({ method: 'GET', url: documentPath }).then((document) => compileDocument(document.payload)));
  const checked = async (options: InjectOptions | string) => {
    const response = await inject(options as InjectOptions);
    const { method = 'GET', url = '/' } = typeof options === 'string' ? { url: options } : options;
    const path = typeof url === 'string' ? url : url.pathname;
    const mismatch = mismatchOf(await documented(), { method: method.toUpperCase(), url: path, response });
    if (mismatch) throw new Error(`The answer does not match the ${listener} document: ${mismatch}`);
    return response;
  };
  // The chained form (`app.inject().get(...)`) and the callback form are left as they are.
  app.inject = ((options?: InjectOptions | string, callback?: unknown) =>
    options === undefined || callback !== undefined
      ? (inject as (...args: unknown[]) => unknown)(options, callback)
      : checked(options)) as HostApp['inject'];
}
