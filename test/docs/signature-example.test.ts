// docs/partners.md "Verifying by hand": its steps, followed word for word with node:crypto alone,
// reproduce its worked example's signature from its secret, id, timestamp and body (all read out of
// the guide, so the guide and this test cannot drift apart), and the service signs the same way.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { partnerGuideFile } from '../../src/paths.js';
import { signatureHeader } from '../../src/payments/delivery/sign.js';

const TOLERANCE_SECONDS = 300;

/** The worked example: the ```text block that starts with `secret`, one `label  value` per line. */
function workedExample(guide: string): Record<string, string> {
  const block = [...guide.matchAll(/```text\n([\s\S]*?)```/g)]
    .map((match) => match[1]!)
    .find((candidate) => candidate.startsWith('secret '));
  if (!block) throw new Error('no worked example (a ```text block starting with "secret") in the guide');
  return Object.fromEntries(
    block
      .trimEnd()
      .split('\n')
      .map((line) => {
        const [, label, value] = /^(.+?) {2,}(.+)$/.exec(line) ?? [];
        if (!label || !value) throw new Error(`unreadable line in the worked example: ${line}`);
        return [label, value];
      }),
  );
}

/** Step 1: the bytes the base64 after `whsec_` decodes to. */
const keyOf = (secret: string) => Buffer.from(secret.slice('whsec_'.length), 'base64');

/** Steps 2 and 3: base64 of the HMAC-SHA256 of `id.timestamp.body`. */
const expectedSignature = (key: Buffer, id: string, timestamp: string, body: string) =>
  createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');

/** Steps 4 and 5: any `v1,` signature equal in constant time, and the timestamp within tolerance. */
function verify(secret: string, id: string, timestamp: string, body: string, header: string, nowSeconds: number) {
  const expected = Buffer.from(expectedSignature(keyOf(secret), id, timestamp, body));
  const matches = header
    .split(' ')
    .filter((part) => part.startsWith('v1,'))
    .map((part) => Buffer.from(part.slice('v1,'.length)))
    .some((signature) => signature.length === expected.length && timingSafeEqual(signature, expected));
  return matches && Math.abs(nowSeconds - Number(timestamp)) <= TOLERANCE_SECONDS;
}

describe('the partner guide’s worked signature example', () => {
  const example = workedExample(readFileSync(partnerGuideFile, 'utf8'));
  const { secret, webhookId, timestamp, body, signature } = {
    secret: example.secret!,
    webhookId: example['webhook-id']!,
    timestamp: example['webhook-timestamp']!,
    body: example.body!,
    signature: example['webhook-signature']!,
  };
  const signedAt = Number(timestamp);

  it('decodes the secret to the key bytes it shows, and states the body’s length', () => {
    expect(keyOf(secret).toString('hex')).toBe(example['key (hex)']);
    const guide = readFileSync(partnerGuideFile, 'utf8');
    expect(guide).toContain(`the body is the ${Buffer.byteLength(body)} bytes shown`);
  });

  it('reproduces the signature by the guide’s steps, and the service signs the same', () => {
    expect(`v1,${expectedSignature(keyOf(secret), webhookId, timestamp, body)}`).toBe(signature);
    expect(signatureHeader([secret], webhookId, signedAt, body)).toBe(signature);
  });

  it('shows what keying with the base64 text gives, and that it does not verify', () => {
    const textKeyed = `v1,${createHmac('sha256', secret.slice('whsec_'.length)).update(`${webhookId}.${timestamp}.${body}`).digest('base64')}`;
    expect(textKeyed).toBe(example['wrong key']);
    expect(verify(secret, webhookId, timestamp, body, textKeyed, signedAt)).toBe(false);
  });

  it('accepts any one matching v1 signature of several, within the tolerance only', () => {
    const rotating = `v1,${expectedSignature(Buffer.alloc(24, 7), webhookId, timestamp, body)} ${signature}`;
    expect(verify(secret, webhookId, timestamp, body, rotating, signedAt)).toBe(true);
    expect(verify(secret, webhookId, timestamp, body, signature, signedAt + TOLERANCE_SECONDS)).toBe(true);
    expect(verify(secret, webhookId, timestamp, body, signature, signedAt - TOLERANCE_SECONDS - 1)).toBe(false);
    expect(verify(secret, webhookId, timestamp, body, signature, Math.floor(Date.now() / 1000))).toBe(false);
    expect(verify(secret, webhookId, timestamp, `${body}\n`, signature, signedAt)).toBe(false);
    expect(verify(secret, webhookId, timestamp, body, signature.replace('v1,', 'v2,'), signedAt)).toBe(false);
  });
});
