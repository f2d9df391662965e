// The type of a host's Fastify app, which the plugins of this folder take.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { ListenerName } from '../../config.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Which listener the host is. */
    listener: ListenerName;
  }
}

export type HostApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;
