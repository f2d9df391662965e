// Seals the one kind of secret the service must read back: the payment endpoint signing secret
// (the service signs outbound requests with it). AES-256-GCM under SECRET_ENCRYPTION_KEY, so a
// database leak alone yields no usable key.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export class SecretBox {
  constructor(private readonly key: Buffer) {}

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join('.');
  }

  open(sealed: string): string {
    const [version, iv, tag, body] = sealed.split('.');
    if (version !== 'v1') throw new Error('unknown sealed secret version');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
  }
}

/**
 * The configured key, or one kept in DATA_DIR (created on first use, mode 0600), so that local
 * runs need no setup. Production sets SECRET_ENCRYPTION_KEY, the same for every instance.
 */
export function secretBoxFor(configuredKey: Buffer | null, dataDir: string): SecretBox {
  if (configuredKey) return new SecretBox(configuredKey);
  const keyPath = path.join(dataDir, 'secret-encryption.key');
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
  return new SecretBox(Buffer.from(readFileSync(keyPath, 'utf8').trim(), 'hex'));
}
