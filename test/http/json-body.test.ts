import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { errorCodes, type FastifyInstance } from 'fastify';
import { isLosslessNumber, LosslessNumber } from 'lossless-json';
import { afterEach, describe, expect, it } from 'vitest';
import { INVALID_JSON_BODY_CODE, registerJsonBodyParser } from '../../src/http/json-body.js';

const BODY_LIMIT = 1024;
let app: FastifyInstance;
let received: unknown;

async function buildApp(bodyLimit = BODY_LIMIT): Promise<FastifyInstance> {
  const instance = Fastify({ bodyLimit });
  registerJsonBodyParser(instance);
  const capture = async (request: { body: unknown }) => {
    received = request.body;
    return { ok: true };
  };
  instance.post('/plain', capture);
  instance.post('/lossless', { config: { losslessJsonNumbers: true } }, capture);
  await instance.ready();
  return instance;
}

async function post(path: string, payload: string, contentType = 'application/json') {
  received = undefined;
  return app.inject({ method: 'POST', url: path, headers: { 'content-type': contentType }, payload });
}

afterEach(async () => {
  await app?.close();
});

describe('ordinary routes: the same values as JSON.parse', () => {
  const bodies = [
    '{"text":"Hello","sort_order":3,"is_active":true,"nothing":null}',
    '[1,2.5,-3,1e3,-0,"x",false,null,[],{}]',
    '{"a":{"b":{"c":[{"d":[1,{"e":"deep"}]}]}},"f":[[[]]]}',
    '{"unicode":"مرحبا ✈ \\u00e9\\ud83d\\ude00","escapes":"\\"\\\\\\/\\b\\f\\n\\r\\t"}',
    ' \n\t{ "spaced" : [ 1 , 2 ] }\r\n',
    '"a string"',
    '42',
    'null',
    '{"same":1,"same":1}',
  ];

  it.each(bodies)('%s', async (body) => {
    app = await buildApp();
    const response = await post('/plain', body);
    expect(response.statusCode).toBe(200);
    expect(received).toStrictEqual(JSON.parse(body));
  });

  it.each([
    'application/json; charset=utf-8',
    'application/json;charset=UTF-8',
    'Application/JSON',
    'application/vnd.api+json',
    'application/merge-patch+json; charset=utf-8',
  ])('accepts Content-Type %s', async (contentType) => {
    app = await buildApp();
    const response = await post('/plain', '{"sort_order":1.5}', contentType);
    expect(response.statusCode).toBe(200);
    expect(received).toStrictEqual({ sort_order: 1.5 });
  });

  it('accepts a constructor key without a prototype inside, like Fastify', async () => {
    app = await buildApp();
    const response = await post('/plain', '{"constructor":{"name":"x"}}');
    expect(response.statusCode).toBe(200);
    expect(Object.getOwnPropertyDescriptor(received, 'constructor')?.value).toStrictEqual({ name: 'x' });
  });

  it('accepts a leading byte order mark, like Fastify', async () => {
    app = await buildApp();
    await post('/plain', '\uFEFF{"a":1}');
    expect(received).toStrictEqual({ a: 1 });
  });
});

describe('routes with config.losslessJsonNumbers: every number keeps its source text', () => {
  it.each([
    ['100.10', '100.10'],
    ['100', '100'],
    ['12345678901234567890123', '12345678901234567890123'],
    ['0.1000000000000000000000001', '0.1000000000000000000000001'],
    ['-1.50e+3', '-1.50e+3'],
  ])('amount %s is exposed as "%s"', async (number, text) => {
    app = await buildApp();
    const response = await post('/lossless', `{"amount": ${number}}`);
    expect(response.statusCode).toBe(200);
    const { amount } = received as { amount: unknown };
    expect(isLosslessNumber(amount)).toBe(true);
    expect((amount as LosslessNumber).value).toBe(text);
  });

  it('makes nested numbers lossless too and leaves other values as JSON.parse does', async () => {
    app = await buildApp();
    await post('/lossless', '{"status":"paid","ok":true,"none":null,"gateway_data":{"fees":[1.5]}}');
    expect(received).toStrictEqual({
      status: 'paid',
      ok: true,
      none: null,
      gateway_data: { fees: [new LosslessNumber('1.5')] },
    });
  });
});

describe('numbers a JS number cannot hold exactly', () => {
  it('are refused on ordinary routes, naming their field; kept exactly on lossless ones', async () => {
    app = await buildApp();
    for (const [body, field] of [
      ['{"sort_order":0.99999999999999999999}', 'sort_order'],
      ['{"a":[1,{"b":9007199254740993}]}', 'a.1.b'],
      ['1e-400', '(root)'],
    ]) {
      const response = await post('/plain', body);
      expect(response.statusCode).toBe(400);
      expect(received).toBeUndefined();
      expect(JSON.stringify(response.json())).toContain(field);
      expect((await post('/lossless', body)).statusCode).toBe(200);
    }
  });
});

describe('no body', () => {
  it('is no body, declared JSON or not: the route says whether it needs one', async () => {
    app = await buildApp();
    for (const path of ['/plain', '/lossless']) {
      const response = await post(path, '');
      expect(response.statusCode).toBe(200);
      expect(received).toBeUndefined();
    }
  });
});

describe('rejected bodies', () => {
  const invalidJsonBody = { statusCode: 400, code: INVALID_JSON_BODY_CODE };

  it("uses the code of Fastify's own invalid-JSON error", () => {
    expect(new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY().code).toBe(INVALID_JSON_BODY_CODE);
  });

  it.each([
    ['__proto__ key', '{"__proto__":{"x":1}}'],
    ['__proto__ key written with escapes', '{"\\u005f_proto__":{"x":1}}'],
    ['nested __proto__ key', '{"a":[{"__proto__":{"isAdmin":true}}]}'],
    ['constructor.prototype', '{"constructor":{"prototype":{}}}'],
    ['nested constructor.prototype', '{"a":{"constructor":{"prototype":{"x":1}}}}'],
    ['whitespace only', '  \n'],
    ['trailing comma', '{"a":1,}'],
    ['single quotes', "{'a':1}"],
    ['unquoted key', '{a:1}'],
    ['missing value', '{"a":}'],
    ['NaN', '{"a":NaN}'],
    ['leading zero', '{"a":01}'],
    ['two values', '{"a":1}{"b":2}'],
    ['unterminated', '{"a":"b'],
    ['a key repeated with another value', '{"amount":"1.00","amount":"100.00"}'],
  ])('%s: 400 %s', async (_name, body) => {
    app = await buildApp();
    for (const path of ['/plain', '/lossless']) {
      const response = await post(path, body);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject(invalidJsonBody);
      expect(received).toBeUndefined();
    }
  });

  it('answers absurdly deep nesting with a 400, not a crash', async () => {
    const depth = 200_000;
    app = await buildApp(4 * depth);
    const response = await post('/plain', '['.repeat(depth) + ']'.repeat(depth));
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject(invalidJsonBody);
  });

  it('keeps Fastify 413 for a body over the limit', async () => {
    app = await buildApp();
    const response = await post('/plain', JSON.stringify({ text: 'x'.repeat(BODY_LIMIT) }));
    expect(response.statusCode).toBe(413);
    expect(response.json()).toMatchObject({ code: 'FST_ERR_CTP_BODY_TOO_LARGE' });
  });
});

it("registers on an instance with the TypeBox type provider, and parses its routes' bodies", async () => {
  const typed = Fastify().withTypeProvider<TypeBoxTypeProvider>();
  registerJsonBodyParser(typed);
  typed.post('/lossless', { config: { losslessJsonNumbers: true } }, async (request) => {
    const { amount } = request.body as { amount: unknown };
    return { lossless: isLosslessNumber(amount), amount: String(amount) };
  });
  try {
    const response = await typed.inject({
      method: 'POST',
      url: '/lossless',
      headers: { 'content-type': 'application/json' },
      payload: '{"amount":100.10}',
    });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ lossless: true, amount: '100.10' });
  } finally {
    await typed.close();
  }
});
