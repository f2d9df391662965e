// Seals the one kind of secret the service must read back: the payment endpoint signing secret
// (the service signs outbound requests with it). AES-256-GCM under SECRET_ENCRYPTION_KEY, so a
// database leak alone yields no usable key. During a key rotation the previous keys still open
// what they sealed, until `partnerctl secrets rekey` has sealed everything again under the new one.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** How many opened secrets a SecretBox keeps, the one opened longest ago going first. */
const OPENED_KEPT = 4096;

export class SecretBox {
  /**
   * The secrets opened lately, by their sealed text: every payment request is signed with its
   * tenant's, and opening costs a decryption. The process holds the keys that open them anyway.
   */
  private readonly openedLately = new Map<string, string>();

  /**
   * `current` seals and opens (a key, or the key file kept in DATA_DIR); `previous` keys only
   * open.
   */
  constructor(
    private readonly current: Buffer | KeyFile,
    private readonly previous: Buffer[] = [],
  ) {}

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.sealingKey(), iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join('.');
  }

  /** The key new secrets are sealed with; a key file not there yet is made now. */
  sealingKey(): Buffer {
    return Buffer.isBuffer(this.current) ? this.current : this.current.made();
  }

  open(sealed: string): string {
    let plain = this.openedLately.get(sealed);
    if (plain === undefined) {
      plain = this.opened(sealed).plain;
      // Bounded: the oldest one opened goes first.
      if (this.openedLately.size >= OPENED_KEPT) this.openedLately.delete(this.openedLately.keys().next().value!);
      this.openedLately.set(sealed, plain);
    }
    return plain;
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

  /** The fingerprints (`keyFingerprint`) of the keys there are now. */
  fingerprints(): string[] {
    return this.keys().map(keyFingerprint);
  }

  /** The fingerprints (`keyFingerprint`) of the keys that open at least one of `sealed`. */
  fingerprintsOpening(sealed: string[]): string[] {
    const keys = this.keys();
    const opening = new Set<number>();
    for (const secret of sealed) {
      try {
        opening.add(keys.indexOf(this.opened(secret).key));
      } catch {
        // Opened by none of the keys: no fingerprint to give.
      }
    }
    return [...opening].sort().map((index) => keyFingerprint(keys[index]));
  }

  /** `sealed` sealed under the current key, or null when it already is. */
  reseal(sealed: string): string | null {
    const { plain, key } = this.opened(sealed);
    return key === this.existingCurrent() ? null : this.seal(plain);
  }

  /** The current key, when it exists: a key file not made yet is none. */
  private existingCurrent(): Buffer | null {
    return Buffer.isBuffer(this.current) ? this.current : this.current.read();
  }

  /** The keys that exist now, the current one first. */
  private keys(): Buffer[] {
    const current = this.existingCurrent();
    return current ? [current, ...this.previous] : this.previous;
  }

  /** The secret and the key that opened it: the GCM tag makes every other key fail. */
  private opened(sealed: string): { plain: string; key: Buffer } {
    const [version, iv, tag, body] = sealed.split('.');
    if (version !== 'v1') throw new Error('unknown sealed secret version');
    for (const key of this.keys()) {
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'));
      decipher.setAuthTag(Buffer.from(tag, 'base64'));
      try {
        const plain = Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
        return { plain, key };
      } catch {
        // Not this key: try the next one.
      }
    }
    throw new Error('sealed secret opens with none of the configured keys');
  }
}

/**
 * A key named without being shown: the first 16 hex digits of the SHA-256 of its 32 bytes (for a
 * key file: `xxd -r -p secret-encryption.key | sha256sum | cut -c1-16`).
 */
export function keyFingerprint(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}

const KEY_FILE_NAME = 'secret-encryption.key';

/** Where the embedded default keeps its generated key: beside the data it protects. */
export const keyFilePath = (dataDir: string) => path.join(dataDir, KEY_FILE_NAME);

const readKeyFile = (keyPath: string) => Buffer.from(readFileSync(keyPath, 'utf8').trim(), 'hex');

/**
 * The key kept in DATA_DIR when none is configured, read when it is there and made only when a
 * secret is sealed or the service starts on a database holding none it cannot open: a DATA_DIR
 * restored without its key file is refused, never given a new key at the path the old one belongs.
 */
export class KeyFile {
  private key: Buffer | null = null;

  constructor(readonly path: string) {}

  /** The key in the file, or null while there is none. */
  read(): Buffer | null {
    if (!this.key && existsSync(this.path)) this.key = readKeyFile(this.path);
    return this.key;
  }

  /** The key in the file, made first (mode 0600) when there is none. */
  made(): Buffer {
    const existing = this.read();
    if (existing) return existing;
    mkdirSync(path.dirname(this.path), { recursive: true });
    // Written aside and linked into place, so that instances starting together never read half a key.
    const draftPath = `${this.path}.${process.pid}`;
    writeFileSync(draftPath, randomBytes(32).toString('hex'), { mode: 0o600 });
    try {
      linkSync(draftPath, this.path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      rmSync(draftPath, { force: true });
    }
    return this.read()!;
  }
}

/**
 * The configured keys, or the one kept in DATA_DIR (see KeyFile), so that local runs need no
 * setup. Production sets SECRET_ENCRYPTION_KEY, the same for every instance. A key file left from
 * before a key was configured still opens what it sealed, until a rekey.
 */
export function secretBoxFor(configuredKey: Buffer | null, previousKeys: Buffer[], dataDir: string): SecretBox {
  const keyFile = new KeyFile(keyFilePath(dataDir));
  if (!configuredKey) return new SecretBox(keyFile, previousKeys);
  const leftOver = keyFile.read();
  return new SecretBox(configuredKey, [...previousKeys, ...(leftOver ? [leftOver] : [])]);
}
