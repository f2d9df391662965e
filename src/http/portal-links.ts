// The partner portal's one-time links, as both ways of asking for one give them: the tenant's
// backend (`POST /api/v1/portal-sessions/`) and an operator (the console's tenant page).
import type { AppContext } from '../context.js';
import { issuePortalLink, type PortalLinkRequest } from '../tenants/index.js';

/** The portal's path that spends a link (`?token=`) and opens its session. */
export const PORTAL_SIGN_IN_PATH = '/sign-in';

/** A new link on the portal's public URL, and when it stops working. */
export async function newPortalLink(
  context: AppContext,
  request: PortalLinkRequest,
): Promise<{ url: string; expiresAt: Date }> {
  const { token, expiresAt } = await issuePortalLink(context.db, request);
  return { url: `${context.publicUrls.portal}${PORTAL_SIGN_IN_PATH}?token=${token}`, expiresAt };
}
