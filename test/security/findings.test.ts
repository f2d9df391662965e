// The security review's findings, each shown fixed: callback fields, prompt text, the admin token,
// links that ignore the Host header, protective headers, private files, the signing-key rule.
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { CALLBACK_PATH, createInvoice, keyOf, notificationFor, notify } from '../payments/support.js';
import { useApps, useTenant } from '../support/apps.js';
import { createEmptyDatabase, TEST_DATABASE_URL, type TestDatabase } from '../support/database.js';
import { TEST_ADMIN_TOKEN, testEnv } from '../support/env.js';
import { partnerctl, startServiceProcess } from '../support/process.js';

const service = useApps(['integrations', 'backend', 'admin'], { listen: true });
const tenant = useTenant(service);

describe('payment callback fields', () => {
  it.each([
    ['transaction_id', 'tx\u0000'],
    ['status', 'paid\u0000'],
    ['gateway', 'tap\u0000'],
    ['transaction_id', 'tx-\ud800'],
    ['transaction_id', 'x'.repeat(12_000)],
    ['currency', 'S'.repeat(256)],
    ['amount', '1\u0000'],
  ])('%s with NUL, a lone surrogate or over 255 characters is 400 Invalid <field>', async (field, value) => {
    const invoice = await createInvoice(service, tenant);
    const response = await notify(service, notificationFor(invoice, { [field]: value }), keyOf(tenant));
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: `Invalid ${field}` });
  });

  it('keeps the documented order: an invalid field before a later missing one', async () => {
    const invoice = await createInvoice(service, tenant);
    const body = notificationFor(invoice, { transaction_id: 'a\u0000', status: undefined });
    expect((await notify(service, body, keyOf(tenant))).json()).toEqual({ error: 'Invalid transaction_id' });
  });

  it('never lets two transaction ids differing in lone surrogates deduplicate as one', async () => {
    const invoice = await createInvoice(service, tenant);
    for (const id of ['tx-\ud800', 'tx-\udfff']) {
      const response = await notify(service, notificationFor(invoice, { transaction_id: id }), keyOf(tenant));
      expect(response.json()).toEqual({ error: 'Invalid transaction_id' });
    }
    expect((await notify(service, notificationFor(invoice), keyOf(tenant))).json()).toEqual({ status: 'success' });
  });

  it('answers an over-long body field 413 and a NUL in an extra field 400, never 500', async () => {
    const invoice = await createInvoice(service, tenant);
    const withNul = await notify(service, { ...notificationFor(invoice), note: 'a\u0000b' }, keyOf(tenant));
    expect(withNul.statusCode).toBe(400);
    expect(withNul.json()).toEqual({ error: 'Invalid JSON body' });
    const response = await notify(service, `{"note": "${'x'.repeat(70_000)}"}`, keyOf(tenant), CALLBACK_PATH);
    expect(response.statusCode).toBe(413);
  });
});

describe('suggested prompt text', () => {
  const create = (text: string) =>
    service.apps.integrations!.inject({
      method: 'POST',
      url: '/api/v1/suggested-prompts/',
      headers: { authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}` },
      payload: { language: 'ar', text },
    });

  it.each([
    ['only invisible characters', '\u200B\u200B'],
    ['a bidi override', 'abc\u202Egnp.exe'],
    ['a bidi isolate', 'abc\u2067def'],
    ['a run of combining marks', `a${'\u0301'.repeat(12)}`],
  ])('refuses %s', async (_name, text) => {
    const response = await create(text);
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe('VALIDATION_ERROR');
  });

  it('accepts Arabic with its vowel marks', async () => {
    expect((await create('مَرْحَبًا بِكَ فِي الرِّيَاض')).statusCode).toBe(201);
  });

  it.each([
    ['a Unicode tag inside', 'hello\u{E0041}\u{E0042} world'],
    ['an invisible plus (U+2064)', 'one\u2064two'],
    ['the Mongolian vowel separator (U+180E)', 'one\u180Etwo'],
    ['a soft hyphen (U+00AD)', 'sea\u00ADside'],
    ['a word joiner (U+2060)', 'sea\u2060side'],
    ['only a Hangul filler (U+3164)', '\u3164'],
    ['only a braille blank (U+2800)', '\u2800\u2800'],
    ['only Hangul choseong and jungseong fillers', '\u115F\u1160'],
    ['only a zero-width joiner', '\u200D'],
  ])('refuses %s: 400 VALIDATION_ERROR naming the field', async (_name, text) => {
    const response = await create(text);
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatchObject({ code: 'VALIDATION_ERROR', details: [{ field: 'text' }] });
  });

  it.each([
    ['Persian with a zero-width non-joiner', 'می\u200Cخواهم به ریاض بروم'],
    [
      'an emoji sequence with a zero-width joiner and a variation selector',
      'family \u{1F468}\u200D\u{1F469}\u200D\u{1F467} \u2764\uFE0F',
    ],
  ])('accepts %s', async (_name, text) => {
    expect((await create(text)).statusCode).toBe(201);
  });
});

describe('the admin token', () => {
  it('refuses a token under 32 characters', () => {
    expect(() => loadConfig({ ADMIN_TOKEN: 'x' }, false)).toThrow(ConfigError);
    expect(() => loadConfig({ ADMIN_TOKEN: '0123456789abcdef'.repeat(2).slice(1) }, false)).toThrow(
      'at least 32 characters',
    );
    expect(loadConfig({ ADMIN_TOKEN: TEST_ADMIN_TOKEN }, false).adminToken).toBe(TEST_ADMIN_TOKEN);
  });

  it.each([
    ['one character repeated', 'a'.repeat(32), 'too predictable'],
    ['two characters alternating', 'ab'.repeat(32), 'too predictable'],
    ['only spaces', ' '.repeat(32), 'whitespace'],
    ['a space inside', `${TEST_ADMIN_TOKEN.slice(0, 20)} ${TEST_ADMIN_TOKEN.slice(20)}`, 'whitespace'],
  ])('refuses a weak token (%s) in one line naming the fix', (_name, token, reason) => {
    expect(() => loadConfig({ ADMIN_TOKEN: token }, false)).toThrow(
      new RegExp(`^ADMIN_TOKEN .*${reason}.*openssl rand -hex 32\\)$`),
    );
  });

  it.each([
    `Bearer ${TEST_ADMIN_TOKEN} junk`,
    `Bearer  ${TEST_ADMIN_TOKEN}`,
    `${TEST_ADMIN_TOKEN}`,
    `Bearer ${TEST_ADMIN_TOKEN}x`,
  ])('parses Authorization strictly: %j is 401', async (authorization) => {
    const response = await service.apps.admin!.inject({
      method: 'GET',
      url: '/admin/v1/tenants',
      headers: { authorization },
    });
    expect(response.statusCode).toBe(401);
  });

  it('accepts exactly `Bearer <token>`, scheme in any case', async () => {
    for (const scheme of ['Bearer', 'bearer']) {
      const response = await service.apps.admin!.inject({
        method: 'GET',
        url: '/admin/v1/tenants',
        headers: { authorization: `${scheme} ${TEST_ADMIN_TOKEN}` },
      });
      expect(response.statusCode).toBe(200);
    }
  });
});

describe('links and flag URLs', () => {
  it.each([
    ['backend', '/v1/countries/?limit=1', () => ({ authorization: `Api-Key ${partnerKeyForLinks}` })],
    [
      'integrations',
      '/api/v1/countries/?limit=1',
      () => ({ authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}` }),
    ],
  ] as const)('come from the public URLs on the %s host, whatever the Host header', async (listener, url, headers) => {
    partnerKeyForLinks ??= (
      await service.admin('POST', '/partner-keys', { name: 'links', scopes: ['countries:read'] })
    ).json().key;
    const response = await service.apps[listener]!.inject({
      method: 'GET',
      url,
      headers: { ...headers(), host: 'evil.example' },
    });
    expect(response.statusCode).toBe(200);
    expect(response.body).not.toContain('evil.example');
    expect(response.body).toContain(`${service.urls.backend}/static/flags/`);
    expect(response.body).toContain(`"next":"${service.urls[listener]}`);
  });
});
let partnerKeyForLinks: string | undefined;

describe('response headers', () => {
  it('carry nosniff and frame protection on every host, and a CSP on the docs page', async () => {
    const answers = [
      await service.apps.integrations!.inject({ method: 'GET', url: '/api/v1/countries/' }),
      await service.apps.backend!.inject({ method: 'GET', url: '/static/flags/sa.svg' }),
      await service.apps.admin!.inject({ method: 'GET', url: '/healthz' }),
    ];
    for (const response of answers) {
      expect(response.headers['x-content-type-options']).toBe('nosniff');
      expect(response.headers['x-frame-options']).toBe('SAMEORIGIN');
      expect(response.headers['access-control-allow-origin']).toBeUndefined();
    }
    // Flags are embedded by partners' pages on other origins.
    expect(answers[1].headers['cross-origin-resource-policy']).toBe('cross-origin');
    const docs = await service.apps.admin!.inject({ method: 'GET', url: '/admin/docs/' });
    expect(docs.statusCode).toBe(200);
    expect(docs.headers['content-security-policy']).toMatch(/default-src 'self'/);
    expect(docs.headers['content-security-policy']).not.toMatch(/upgrade-insecure-requests/);
  });

  it('tell caches between never to keep an answer to a credential, unless it revalidates with its ETag', async () => {
    const sso = { authorization: `Api-Key ${tenant.credentials.sso_hmac_secret}` };
    const admin = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };
    const private_ = [
      await service.apps.integrations!.inject({ method: 'POST', url: '/api/v1/portal-sessions/', headers: sso }),
      await service.apps.integrations!.inject({ method: 'GET', url: '/api/v1/suggested-prompts/', headers: sso }),
      await service.apps.integrations!.inject({ method: 'GET', url: '/api/v1/trips/nope/', headers: sso }),
      await notify(service, {}, keyOf(tenant)),
      await service.apps.admin!.inject({
        method: 'POST',
        url: `/admin/v1/tenants/${tenant.tenant.id}/credentials`,
        headers: admin,
        payload: { kind: 'test_sso_hmac_secret' },
      }),
      await service.apps.admin!.inject({ method: 'GET', url: '/admin/v1/operators', headers: admin }),
    ];
    expect(private_.map((response) => response.statusCode)).toEqual([201, 200, 404, 400, 201, 200]);
    for (const response of private_) expect(response.headers['cache-control']).toBe('no-store');
    const listing = await service.apps.integrations!.inject({ method: 'GET', url: '/api/v1/countries/', headers: sso });
    expect(listing.headers['cache-control']).toBe('private, no-cache');
  });
});

describe('files in DATA_DIR', () => {
  let database: TestDatabase | undefined;
  afterAll(() => database?.drop());

  it('are private to the service whatever the umask it was started with', async () => {
    // A directory the service creates itself: its embedded server's, or DATA_DIR beside PostgreSQL.
    const parent = mkdtempSync(path.join(tmpdir(), 'pi-modes-'));
    // As root, the embedded server's user must reach DATA_DIR through its parent.
    chmodSync(parent, 0o755);
    const dataDir = path.join(parent, 'data');
    if (TEST_DATABASE_URL) database = await createEmptyDatabase('pi_modes');
    const target = database?.target ?? { dataDir };
    const previous = process.umask(0);
    let running: Awaited<ReturnType<typeof startServiceProcess>> | undefined;
    try {
      // Without ADMIN_TOKEN the generated one is written into DATA_DIR: a file there on both databases.
      const { ADMIN_TOKEN: _generated, ...env } = testEnv(target);
      running = await startServiceProcess({ ...env, DATA_DIR: dataDir });
    } finally {
      process.umask(previous);
    }
    expect(await running.stop('SIGTERM')).toBe(0);
    const loose: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if ((statSync(full).mode & 0o077) !== 0) loose.push(full);
        if (entry.isDirectory()) walk(full);
      }
    };
    // Run as root, the embedded server runs as its own user, who may cross DATA_DIR, never list it.
    const crossable = !TEST_DATABASE_URL && process.getuid?.() === 0 ? 0o011 : 0;
    if ((statSync(dataDir).mode & 0o077 & ~crossable) !== 0) loose.push(dataDir);
    walk(dataDir);
    expect(loose).toEqual([]);
    rmSync(parent, { recursive: true, force: true });
    // A first start: migrations and the whole reference data import, in a process of its own.
  }, 120_000);
});

describe.skipIf(!TEST_DATABASE_URL)('the signing-key rule with PostgreSQL', () => {
  it('refuses to start without SECRET_ENCRYPTION_KEY, in one readable line', async () => {
    const env = testEnv({ databaseUrl: TEST_DATABASE_URL! });
    delete env.SECRET_ENCRYPTION_KEY;
    const result = await partnerctl(['serve'], env);
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe(
      'partnerctl: SECRET_ENCRYPTION_KEY must be set with DATABASE_URL: every instance seals and opens the signing secrets with it',
    );
  });
});
