// Seals the one kind of secret the service must read back: the payment endpoint signing secret
// (the service signs outbound requests with it). AES-256-GCM under SECRET_ENCRYPTION_KEY, so a
// database leak alone yields no usable key. During a key rotation the previous keys still open
// what they sealed, until `partnerctl secrets rekey` has sealed everything again under the new one.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export class SecretBox {
  private readonly keys: Buffer[];

  /** `current` seals and opens; `previous` keys only open. */
  constructor(current: Buffer, previous: Buffer[] = []) {
    this.keys = [current, ...previous];
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.keys[0], iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join('.');
  }

  open(sealed: string): string {
    return this.opened(sealed).plain;
  }

  /** Whether one of the keys opens `sealed`. */
  opens(sealed: string): boolean {
    try {
      this.opened(sealed);
      return true;
    } catch {
      return false;
    }
  }

  /** `sealed` sealed under the current key, or null when it already is. */
  reseal(sealed: string): string | null {
    const { plain, keyIndex } = this.opened(sealed);
    return keyIndex === 0 ? null : this.seal(plain);
  }

  /** The secret and which key opened it: the GCM tag makes every other key fail. */
  private opened(sealed: string): { plain: string; keyIndex: number } {
    const [version, iv, tag, body] = sealed.split('.');
    if (version !== 'v1') throw new Error('unknown sealed secret version');
    for (const [keyIndex, key] of this.keys.entries()) {
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'));
      decipher.setAuthTag(Buffer.from(tag, 'base64'));
      try {
        const plain = Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
        return { plain, keyIndex };
      } catch {
        // Not this key: try the next one.
      }
    }
    throw new Error('sealed secret opens with none of the configured keys');
  }
}

const KEY_FILE_NAME = 'secret-encryption.key';

/** Where the embedded default keeps its generated key: beside the data it protects. */
export const keyFilePath = (dataDir: string) => path.join(dataDir, KEY_FILE_NAME);

const readKeyFile = (keyPath: string) => Buffer.from(readFileSync(keyPath, 'utf8').trim(), 'hex');

/**
 * The configured keys, or one kept in DATA_DIR (created on first use, mode 0600), so that local
 * runs need no setup. Production sets SECRET_ENCRYPTION_KEY, the same for every instance. A key
 * file left from before a key was configured still opens what it sealed, until a rekey.
 */
export function secretBoxFor(configuredKey: Buffer | null, previousKeys: Buffer[], dataDir: string): SecretBox {
  const keyPath = keyFilePath(dataDir);
  if (configuredKey) {
    return new SecretBox(configuredKey, [...previousKeys, ...(existsSync(keyPath) ? [readKeyFile(keyPath)] : [])]);
  }
  mkdirSync(dataDir, { recursive: true });
  // Written aside and linked into place, so that instances starting together never read half a key.
  const draftPath = `${keyPath}.${process.pid}`;
  writeFileSync(draftPath, randomBytes(32).toString('hex'), { mode: 0o600 });
  try {
    linkSync(draftPath, keyPath);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    rmSync(draftPath, { force: true });
  }
  return new SecretBox(readKeyFile(keyPath), previousKeys);
}
