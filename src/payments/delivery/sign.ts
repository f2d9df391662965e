// The Standard Webhooks signature (standardwebhooks), one per active secret so that a partner
// rotating its secret verifies with either.
import { Webhook } from 'standardwebhooks';

/** `webhook-signature`: one `v1,<base64 HMAC-SHA256>` per secret (`whsec_...`), space-separated. */
export function signatureHeader(secrets: string[], id: string, timestamp: number, body: string): string {
  const at = new Date(timestamp * 1000);
  return secrets.map((secret) => new Webhook(secret).sign(id, at, body)).join(' ');
}

/** The three headers of a signed message sent at `timestamp` (Unix seconds). */
export function signedHeaders(secrets: string[], id: string, timestamp: number, body: string) {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(secrets, id, timestamp, body),
  };
}
