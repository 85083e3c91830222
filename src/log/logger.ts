import { pino, type DestinationStream, type Logger } from 'pino';
import { redactText, safeError } from './redact.js';
import { NO_TRACE_FIELDS, traceLogFields } from '../tracing/log-fields.js';

export type { Logger };

/**
 * What an error becomes in a log line: see safeError (type, a message that cannot quote values, code, errno,
 * SQL state, the statement's shape, stack frames). pino's default serializer copies every enumerable property,
 * and driver errors carry some that must never be logged (connection options, SQL with bound values,
 * `sqlMessage` quoting a duplicate key). A string is kept with URL passwords masked.
 */
export function serializeError(err: unknown): unknown {
  if (typeof err === 'string') return redactText(err);
  if (typeof err !== 'object' || err === null) return err;
  return safeError(err);
}

/**
 * Every line's fields, before serializers: an Error under any key becomes a safe one (not only under `err`),
 * and a string field loses the password of any URL in it.
 */
function safeFields(object: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(object)) {
    const value = object[key];
    const safe = value instanceof Error ? safeError(value) : typeof value === 'string' ? redactText(value) : value;
    if (safe !== value) (out ??= { ...object })[key] = safe;
  }
  return out ?? object;
}

/**
 * The message text too (a library's console output routed here, a knex warning), and the one pino would take
 * from an error's own message when a line has none: `logger.error(err)` or `logger.error({ err })`.
 */
function safeArguments(this: Logger, args: unknown[], method: (...args: unknown[]) => void): void {
  const [first] = args;
  if (first instanceof Error) args = [{ err: first }, ...args.slice(1)];
  const fields = args[0];
  const err = typeof fields === 'object' && fields !== null ? (fields as { err?: unknown }).err : undefined;
  if (typeof err === 'object' && err !== null && typeof args[1] !== 'string') args.splice(1, 0, safeError(err, false).message);
  for (let i = 0; i < args.length; i++) if (typeof args[i] === 'string') args[i] = redactText(args[i] as string);
  method.apply(this, args);
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
    formatters: { level: (label: string) => ({ level: label }), log: safeFields },
    serializers: { err: serializeError },
    hooks: { logMethod: safeArguments },
    // The trace and span ids of the traced request a line is written in (src/tracing/log-fields.ts). pino's
    // own merge writes the line's fields into the mixin's object; without a trace there is nothing to merge.
    mixin: traceLogFields,
    mixinMergeStrategy: (fields: object, trace: object) => (trace === NO_TRACE_FIELDS ? fields : Object.assign(trace, fields)),
  };
  return pino(options, destination ?? stdoutDestination());
}

/**
 * stdout, as pino's default, except that a write that fails for good (ENOSPC under a redirect to a full disk,
 * EIO) ends the logging instead of the process: pino turns it into an uncaught error, and its exit handler
 * then retries the write forever, so the service hung (never listening, deaf to SIGTERM). The queue keeps
 * working without its log; one line on stderr says so.
 */
function stdoutDestination(): DestinationStream {
  const stream = pino.destination({ dest: 1, sync: false });
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (stream.write === dropped) return;
    stream.write = dropped;
    stream.flushSync = () => undefined;
    stream.end = () => undefined;
    // stderr may be the same closed pipe (`serve 2>&1 | head`): its EPIPE arrives as an 'error' event, which
    // unheard would end the process with code 1. The queue goes on without anywhere to tell.
    process.stderr.on('error', () => undefined);
    try {
      process.stderr.write(`conveyor: writing the log to stdout failed (${err.code ?? err.message}); log lines are dropped from now on\n`);
    } catch {
      // stderr is gone too: nothing left to tell
    }
  });
  return stream;
}

function dropped(): boolean {
  return true;
}

/** A logger writing to stderr, for commands whose stdout is their result (`migrate`, `reap`, `config check`). */
export function createStderrLogger(level: string): Logger {
  return createLogger(level, pino.destination({ dest: 2, sync: true }));
}
