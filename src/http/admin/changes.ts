// Every change an operator makes, through the API or the console, is logged with who made it
// (never with its body: it may carry secrets).
import type { FastifyReply, FastifyRequest } from 'fastify';

export async function logAdminChange(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (request.method === 'GET' || request.method === 'HEAD' || reply.statusCode >= 400 || !request.adminActor) return;
  request.log.info(
    { actor: request.adminActor, route: request.routeOptions.url, params: request.params, status: reply.statusCode },
    'admin change',
  );
}
