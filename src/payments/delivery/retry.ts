// When a failed attempt is made again: a pure function of the policy, the attempt, the endpoint's
// `Retry-After` and the invoice's age.

/**
 * Attempt n (n >= 1) failed retryably: wait `base × 2^(n-1)` seconds capped at `maxDelaySeconds`,
 * with "equal jitter" (a random point in the upper half, so waits still grow and many instances do
 * not retry in step), but never less than the endpoint's `Retry-After`. Give up when the next
 * attempt would start later than `giveUpAfterSeconds` after the invoice was created. Defaults:
 * 30 s, 1 h, 24 h: waits of 15 to 30 s, 30 to 60 s, 1 to 2 min, ... then 30 to 60 min.
 */
export interface RetryPolicy {
  baseSeconds: number;
  maxDelaySeconds: number;
  giveUpAfterSeconds: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { baseSeconds: 30, maxDelaySeconds: 3600, giveUpAfterSeconds: 86_400 };

export function backoffSeconds(policy: RetryPolicy, failedAttempt: number, random = Math.random): number {
  const nominal = Math.min(policy.maxDelaySeconds, policy.baseSeconds * 2 ** Math.min(failedAttempt - 1, 30));
  return nominal / 2 + (random() * nominal) / 2;
}

/** `Retry-After` as seconds from now: delta-seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterSeconds(header: string | undefined, now = Date.now()): number | null {
  if (!header) return null;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const date = Date.parse(text);
  return Number.isNaN(date) ? null : Math.max(0, (date - now) / 1000);
}

/**
 * Seconds until the next attempt after attempt `failedAttempt` failed retryably (the endpoint
 * asking for `retryAfter` seconds, or null), or null when it would come past the give-up limit.
 */
export function nextAttemptDelay(
  policy: RetryPolicy,
  failedAttempt: number,
  retryAfter: number | null,
  invoiceCreatedAt: Date,
  now = Date.now(),
  random = Math.random,
): number | null {
  const wait = Math.max(backoffSeconds(policy, failedAttempt, random), retryAfter ?? 0);
  return now + wait * 1000 <= invoiceCreatedAt.getTime() + policy.giveUpAfterSeconds * 1000 ? wait : null;
}
