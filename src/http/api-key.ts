/**
 * The secret of an `Authorization: Api-Key <secret>` header: the scheme word is matched
 * case-insensitively, the secret exactly (DECISIONS §2). Anything else yields undefined.
 */
export function apiKeyFromAuthorization(header: string | undefined): string | undefined {
  const match = header?.match(/^\s*api-key\s+(\S+)\s*$/i);
  return match?.[1];
}
