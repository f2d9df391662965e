// Each request's logger, made when the request first writes a line. Fastify gives every request a
// child of the host's logger with its request id; a child costs the serialisation of its bindings
// (redaction included), and most requests write nothing but their completion line, none at all
// below LOG_LEVEL.
import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level, LogFn, Logger } from 'pino';

class RequestLogger implements FastifyBaseLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  private get logger(): FastifyBaseLogger {
    this.made ??= this.parent.child(this.bindings, this.options);
    return this.made;
  }

  get level(): string {
    return this.made?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.logger.level = level;
  }

  declare readonly trace: LogFn;
  declare readonly debug: LogFn;
  declare readonly info: LogFn;
  declare readonly warn: LogFn;
  declare readonly error: LogFn;
  declare readonly fatal: LogFn;

  silent(): void {}

  /** Writes at `level`; nothing is made while the level is off. */
  write(level: Level, args: unknown[]): void {
    if (!((this.made ?? this.parent) as Logger).isLevelEnabled(level)) return;
    (this.logger[level] as (...values: unknown[]) => void)(...args);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger.child(bindings, options);
  }
}

// The level methods on the prototype: a request's logger is one small object, no closures.
for (const level of ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const) {
  Object.defineProperty(RequestLogger.prototype, level, {
    value(this: RequestLogger, ...args: unknown[]) {
      this.write(level, args);
    },
  });
}

/** Fastify's `childLoggerFactory`: a request's logger made on first use. */
export const requestLogger: NonNullable<FastifyServerOptions['childLoggerFactory']> = (logger, bindings, options) =>
  new RequestLogger(logger, bindings, options);
