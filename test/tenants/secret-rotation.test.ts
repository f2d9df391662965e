// Secrets at rest: rotating SECRET_ENCRYPTION_KEY (the previous key opens until `partnerctl secrets
// rekey` has sealed everything again), and the warning about a key file beside the data.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { eq, isNotNull } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { credentials } from '../../src/db/schema.js';
import { createLogger } from '../../src/logger.js';
import { type RunningService, startService } from '../../src/server.js';
import { sealedPaymentEndpointSecrets } from '../../src/tenants/credentials.js';
import { keyFilePath, SecretBox } from '../../src/tenants/secret-box.js';
import {
  copyTemplateDatabase,
  copyTemplateDataDir,
  TEST_DATABASE_URL,
  type TestDatabase,
} from '../support/database.js';
import { TEST_ADMIN_TOKEN, testEnv } from '../support/env.js';
import { loggerInto } from '../support/logs.js';
import { partnerctl } from '../support/process.js';

const newKey = () => randomBytes(32);
const hex = (key: Buffer) => key.toString('hex');

describe('SecretBox with previous keys', () => {
  it('seals under the current key, opens with any, and reseals only what an older key sealed', () => {
    const [oldKey, currentKey] = [newKey(), newKey()];
    const sealedBefore = new SecretBox(oldKey).seal('whsec_before');
    const rotating = new SecretBox(currentKey, [oldKey]);
    expect(rotating.open(sealedBefore)).toBe('whsec_before');
    const resealed = rotating.reseal(sealedBefore)!;
    expect(new SecretBox(currentKey).open(resealed)).toBe('whsec_before');
    expect(rotating.reseal(resealed)).toBeNull();
    expect(rotating.reseal(rotating.seal('whsec_after'))).toBeNull();
    expect(() => new SecretBox(currentKey).open(sealedBefore)).toThrow(/none of the configured keys/);
    expect(() => new SecretBox(oldKey).open(resealed)).toThrow(/none of the configured keys/);
  });

  it('reads SECRET_ENCRYPTION_KEY_PREVIOUS as a list, only beside SECRET_ENCRYPTION_KEY', () => {
    const [a, b, c] = [newKey(), newKey(), newKey()];
    const config = loadConfig({
      SECRET_ENCRYPTION_KEY: hex(a),
      SECRET_ENCRYPTION_KEY_PREVIOUS: `${hex(b)}, ${c.toString('base64')}`,
    });
    expect(config.previousSecretEncryptionKeys).toEqual([b, c]);
    expect(loadConfig({}).previousSecretEncryptionKeys).toEqual([]);
    expect(() => loadConfig({ SECRET_ENCRYPTION_KEY_PREVIOUS: hex(b) })).toThrow(/needs SECRET_ENCRYPTION_KEY/);
    expect(() => loadConfig({ SECRET_ENCRYPTION_KEY: hex(a), SECRET_ENCRYPTION_KEY_PREVIOUS: 'short' })).toThrow(
      /SECRET_ENCRYPTION_KEY_PREVIOUS must be 32 bytes/,
    );
  });
});

/** Services started one after another on one database, each with its own keys. */
describe('key rotation with partnerctl secrets rekey', () => {
  let database: TestDatabase;
  let running: RunningService | null = null;
  const [oldKey, currentKey] = [newKey(), newKey()];

  async function start(keys: Record<string, string>): Promise<RunningService> {
    await running?.close();
    running = await startService(loadConfig(testEnv(database.target, keys)), createLogger('silent'));
    return running;
  }

  async function admin(method: 'GET' | 'POST', path: string, body?: unknown) {
    const response = await running!.apps.admin!.inject({
      method,
      url: `/admin/v1${path}`,
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
      ...(body !== undefined && { payload: body as Record<string, unknown> }),
    });
    expect(response.statusCode, response.body).toBeLessThan(300);
    return response.json();
  }

  const rekey = (service: RunningService) =>
    partnerctl(['secrets', 'rekey', '--json'], { ADMIN_URL: service.urls.admin!, ADMIN_TOKEN: TEST_ADMIN_TOKEN });

  async function sealedSecrets(service: RunningService) {
    return service.context.db
      .select({ id: credentials.id, sealed: credentials.sealedSecret })
      .from(credentials)
      .where(isNotNull(credentials.sealedSecret));
  }

  beforeAll(async () => {
    database = await copyTemplateDatabase(inject('databaseTemplate'));
  });
  afterAll(async () => {
    await running?.close();
    await database.drop();
  });

  it('opens old secrets with the previous key, reseals them all, then needs only the new key', async () => {
    await start({ SECRET_ENCRYPTION_KEY: hex(oldKey) });
    const created = await admin('POST', '/tenants', { name: 'Rotating', slug: 'rotating', gateway: 'tap' });
    const tenantId = created.tenant.id;
    const rotated = await admin('POST', `/tenants/${tenantId}/credentials`, { kind: 'payment_endpoint_secret' });
    const issued = [rotated.secret, created.credentials.payment_endpoint_secret];

    let service = await start({ SECRET_ENCRYPTION_KEY: hex(currentKey), SECRET_ENCRYPTION_KEY_PREVIOUS: hex(oldKey) });
    const open = (sealed: string) => service.context.secretBox.open(sealed);
    expect((await sealedPaymentEndpointSecrets(service.context.db, tenantId)).map(open)).toEqual(issued);
    const later = await admin('POST', '/tenants', { name: 'Later', slug: 'later', gateway: 'tap' });

    const first = await rekey(service);
    expect(first.code, first.stderr).toBe(0);
    const summary = JSON.parse(first.stdout);
    expect(summary).toMatchObject({ resealed: 2, unreadable: [] });
    const stored = await sealedSecrets(service);
    expect(summary.secrets).toBe(stored.length);
    const onlyCurrent = new SecretBox(currentKey);
    for (const row of stored) expect(() => onlyCurrent.open(row.sealed!)).not.toThrow();
    const again = await rekey(service);
    expect(JSON.parse(again.stdout)).toMatchObject({ resealed: 0, unreadable: [] });
    const audited = await admin('GET', '/audit-events?limit=2');
    expect(audited.results.map((event: { action: string }) => event.action)).toEqual([
      'secrets.rekey',
      'secrets.rekey',
    ]);

    service = await start({ SECRET_ENCRYPTION_KEY: hex(currentKey) });
    expect((await sealedPaymentEndpointSecrets(service.context.db, tenantId)).map(open)).toEqual(issued);
    expect((await sealedPaymentEndpointSecrets(service.context.db, later.tenant.id)).map(open)).toEqual([
      later.credentials.payment_endpoint_secret,
    ]);
  });

  it('refuses to start while an active secret opens with none of its keys, naming the fix in one line', async () => {
    const stranger = hex(newKey());
    await running?.close();
    running = null;
    await expect(
      startService(loadConfig(testEnv(database.target, { SECRET_ENCRYPTION_KEY: stranger })), createLogger('silent')),
    ).rejects.toThrow(
      /^\d+ payment endpoint signing secret\(s\) in the database open with none of the configured keys: set SECRET_ENCRYPTION_KEY to the key that sealed them .*SECRET_ENCRYPTION_KEY_PREVIOUS/,
    );
    // The key that sealed them, as the message says, and the service starts.
    await start({ SECRET_ENCRYPTION_KEY: stranger, SECRET_ENCRYPTION_KEY_PREVIOUS: hex(currentKey) });
  });

  it('names the revoked secrets no configured key opens on rekey, and leaves them as they are', async () => {
    const otherKey = newKey();
    await start({ SECRET_ENCRYPTION_KEY: hex(otherKey), SECRET_ENCRYPTION_KEY_PREVIOUS: hex(currentKey) });
    const orphan = await admin('POST', '/tenants', { name: 'Orphan', slug: 'orphan', gateway: 'tap' });
    const listed = await admin('GET', `/tenants/${orphan.tenant.id}/credentials`);
    const sealedOne = listed.credentials.find(
      (credential: { kind: string }) => credential.kind === 'payment_endpoint_secret',
    );
    await running!.apps.admin!.inject({
      method: 'DELETE',
      url: `/admin/v1/credentials/${sealedOne.id}`,
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
    });
    // Only revoked secrets are out of reach of the keys: the service starts, and rekey names them.
    const service = await start({ SECRET_ENCRYPTION_KEY: hex(currentKey) });
    const result = await rekey(service);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('SECRET_ENCRYPTION_KEY_PREVIOUS');
    expect(result.stderr).toContain(sealedOne.id);
    const [row] = await service.context.db
      .select({ sealed: credentials.sealedSecret })
      .from(credentials)
      .where(eq(credentials.id, sealedOne.id));
    expect(new SecretBox(otherKey).open(row.sealed!)).toMatch(/^whsec_/);
  });
});

describe.skipIf(TEST_DATABASE_URL)('the key file beside the embedded data', () => {
  let database: TestDatabase;
  const lines: string[] = [];
  const logger = loggerInto(lines, 'warn');

  beforeAll(() => {
    database = copyTemplateDataDir(inject('dataDirTemplate'));
  });
  afterAll(() => database.drop());

  it('is warned about at start, and still opens its secrets once a key is configured', async () => {
    const keyFile = keyFilePath(database.target.dataDir!);
    let service = await startService(loadConfig(testEnv(database.target, { SECRET_ENCRYPTION_KEY: '' })), logger);
    const created = await service.apps.admin!.inject({
      method: 'POST',
      url: '/admin/v1/tenants',
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
      payload: { name: 'Filed', slug: 'filed', gateway: 'tap' },
    });
    await service.close();
    expect(existsSync(keyFile)).toBe(true);
    const warning = lines.map((line) => JSON.parse(line)).find((line) => line.key_file === keyFile);
    expect(warning.msg).toMatch(/SECRET_ENCRYPTION_KEY not set: .* a copy of the directory is a copy of the secrets/);

    lines.length = 0;
    service = await startService(
      loadConfig(testEnv(database.target, { SECRET_ENCRYPTION_KEY: hex(newKey()) })),
      logger,
    );
    try {
      const { tenant, credentials: issued } = created.json();
      const open = (sealed: string) => service.context.secretBox.open(sealed);
      expect((await sealedPaymentEndpointSecrets(service.context.db, tenant.id)).map(open)).toEqual([
        issued.payment_endpoint_secret,
      ]);
      expect(lines.map((line) => JSON.parse(line).msg)).toContainEqual(
        expect.stringMatching(/old key file in DATA_DIR .* partnerctl secrets rekey, then delete the file/),
      );
    } finally {
      await service.close();
    }
  });

  it('refuses a start without its key file when sealed secrets need it, naming the file, and writes no new key', async () => {
    const restored = copyTemplateDataDir(inject('dataDirTemplate'));
    const keyFile = keyFilePath(restored.target.dataDir!);
    const withoutKey = () => loadConfig(testEnv(restored.target, { SECRET_ENCRYPTION_KEY: '' }));
    try {
      const service = await startService(withoutKey(), logger);
      await service.apps.admin!.inject({
        method: 'POST',
        url: '/admin/v1/tenants',
        headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
        payload: { name: 'Restored', slug: 'restored', gateway: 'tap' },
      });
      await service.close();
      const original = readFileSync(keyFile);
      // The data directory as restored from a copy that left the key file out.
      rmSync(keyFile);
      await expect(startService(withoutKey(), logger)).rejects.toThrow(
        new RegExp(
          `sealed with a key this DATA_DIR does not have: the key file ${keyFile} is missing.*no new key file`,
        ),
      );
      expect(existsSync(keyFile)).toBe(false);
      // The original put back where the message said: the service starts and opens its secrets.
      writeFileSync(keyFile, original, { mode: 0o600 });
      const back = await startService(withoutKey(), logger);
      await back.close();
      expect(readFileSync(keyFile)).toEqual(original);
    } finally {
      await restored.drop();
    }
  });
});
