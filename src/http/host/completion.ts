// What every answer of a host leaves: its log line and its duration metric.
import { type FastifyBaseLogger, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import type { Logger } from 'pino';
import type { ListenerName } from '../../config.js';
import { loggableUrl } from '../../logger.js';
import type { Metrics } from '../../metrics.js';

/** A request duration series, labelled once. */
interface DurationSeries {
  observe(seconds: number): void;
}

/**
 * What every answer of a host leaves, written at its completion: one log line (half the log
 * volume of Fastify's default pair) and the duration metric, labelled by route template, never
 * the URL: one series per route whatever the ids in paths.
 */
export class RequestCompletion extends LogController {
  private readonly series = new Map<string, Map<string, Map<number, DurationSeries>>>();

  constructor(
    private readonly listener: ListenerName,
    private readonly requestDuration: Metrics['requestDuration'],
    /** The host's logger: each request's logs as a child of it with its `request_id`. */
    private readonly logger: FastifyBaseLogger,
  ) {
    super({ requestIdLogLabel: 'request_id' });
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply): void {
    const { method } = request;
    const status = reply.statusCode;
    const ms = reply.elapsedTime;
    this.durationOf(request.routeOptions.url ?? 'unmatched', method, status).observe(ms / 1000);
    const level = error ? 'error' : 'info';
    if (!(this.logger as Logger).isLevelEnabled(level)) return;
    const line = { method, url: loggableUrl(request.url), status, ms: Math.round(ms * 100) / 100 };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request completed');
  }

  // Nested by route, method and status rather than one joined key: no string is built per request.
  private durationOf(route: string, method: string, status: number): DurationSeries {
    let byMethod = this.series.get(route);
    if (!byMethod) {
      byMethod = new Map();
      this.series.set(route, byMethod);
    }
    let byStatus = byMethod.get(method);
    if (!byStatus) {
      byStatus = new Map();
      byMethod.set(method, byStatus);
    }
    let series = byStatus.get(status);
    if (!series) {
      series = this.requestDuration.labels({ listener: this.listener, route, method, status });
      byStatus.set(status, series);
    }
    return series;
  }
}
