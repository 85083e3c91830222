import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/**
 * What an error becomes in a log line: its type, message, code and stack, nothing else. pino's default
 * serializer copies every enumerable property, and driver errors carry some that must never be logged
 * (connection options, SQL with bound values, `sqlMessage` quoting a duplicate key).
 */
export function serializeError(err: unknown): Record<string, unknown> | unknown {
  if (!(err instanceof Error)) return err;
  const e = err as Error & { code?: unknown; errno?: unknown; sqlState?: unknown; cause?: unknown };
  const out: Record<string, unknown> = { type: e.name || e.constructor?.name || 'Error', message: e.message };
  if (typeof e.code === 'string' || typeof e.code === 'number') out.code = e.code;
  if (typeof e.errno === 'number') out.errno = e.errno;
  if (typeof e.sqlState === 'string') out.sqlState = e.sqlState;
  if (e.stack) out.stack = e.stack;
  if (e.cause instanceof Error) out.cause = serializeError(e.cause);
  return out;
}

/**
 * JSON lines on stdout (or `destination`: the one-shot commands log to stderr, tests capture); `level: silent`
 * keeps tests quiet.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { service: 'conveyor' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
    serializers: { err: serializeError },
  };
  return destination ? pino(options, destination) : pino(options);
}

/** A logger writing to stderr, for commands whose stdout is their result (`migrate`, `reap`, `config check`). */
export function createStderrLogger(level: string): Logger {
  return createLogger(level, pino.destination({ dest: 2, sync: true }));
}
