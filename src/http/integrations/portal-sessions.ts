// `POST /api/v1/portal-sessions/` (DECISIONS §11): the tenant's backend asks, with its SSO secret,
// for a one-time link to the partner portal, in the secret's mode, to hand to its support staff
// (or to open in a frame of its own dashboard). Every link asked for is audited.
import { Type } from '@sinclair/typebox';
import { recordAuditEvent } from '../../audit/index.js';
import { PORTAL_ACCESS, PORTAL_LANGUAGES, PORTAL_LINK_MINUTES, PORTAL_SESSION_HOURS } from '../../tenants/index.js';
import { BODY_OPTIONAL } from '../openapi.js';
import { newPortalLink } from '../portal-links.js';
import { route } from '../route.js';
import { Timestamp } from '../schemas.js';
import { Envelope, ok } from './envelope.js';

export const PORTAL_SESSIONS_ROUTE = '/portal-sessions/';

export const portalSessionRoutes = [
  route({
    method: 'POST',
    url: PORTAL_SESSIONS_ROUTE,
    schema: {
      operationId: 'createPortalSession',
      // Both fields are optional: the body may be left out.
      [BODY_OPTIONAL]: true,
      tags: ['portal'],
      summary: 'A one-time link to the partner portal for your support staff',
      description:
        `The link opens a portal session of your tenant, in the mode of the secret sent (a test secret: a ` +
        `test-mode portal that sees test data only), read-only or read-write. It works once, within ` +
        `${PORTAL_LINK_MINUTES} minutes; the session it opens lasts ${PORTAL_SESSION_HOURS} hours or until ` +
        'signed out. Redirect the browser to it, or put it in a frame of your dashboard (an origin the ' +
        "service allows: PORTAL_FRAME_ANCESTORS). The page language is `language`, else the browser's.",
      body: Type.Object(
        {
          access: Type.Optional(
            Type.Unsafe<(typeof PORTAL_ACCESS)[number]>({
              type: 'string',
              enum: [...PORTAL_ACCESS],
              default: 'read',
              description:
                '`read` (default): see only; `write`: also resend payment requests, ping, create test invoices',
            }),
          ),
          language: Type.Optional(
            Type.Unsafe<(typeof PORTAL_LANGUAGES)[number]>({
              type: 'string',
              enum: [...PORTAL_LANGUAGES],
              description: "The portal's language; without it, the browser's (Accept-Language), else English",
            }),
          ),
        },
        { additionalProperties: false, examples: [{ access: 'read', language: 'ar' }] },
      ),
      response: {
        201: Envelope(
          Type.Object({
            portal_session: Type.Object({
              url: Type.String({ format: 'uri', description: 'The one-time link: a secret until used' }),
              expires_at: Timestamp,
            }),
          }),
        ),
      },
    },
    handler: (context) => async (request, reply) => {
      const { access = 'read', language } = request.body;
      const tenant = request.tenant;
      const actor = `tenant ${tenant.slug} (${request.mode} SSO secret)`;
      const link = await newPortalLink(context, {
        tenantId: tenant.id,
        mode: request.mode,
        access,
        language: language ?? null,
        issuedBy: actor,
        credentialId: request.credentialId,
        operatorId: null,
      });
      await recordAuditEvent(context.db, {
        actor,
        action: `POST /api/v1${PORTAL_SESSIONS_ROUTE}`,
        targetId: tenant.id,
        fields: Object.keys(request.body),
        status: 201,
        address: request.ip,
        requestId: request.id,
      });
      return reply.code(201).send(
        ok('Portal link created.', {
          portal_session: { url: link.url, expires_at: link.expiresAt.toISOString() },
        }),
      );
    },
  }),
];
