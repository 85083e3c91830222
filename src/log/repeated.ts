import type { Logger } from './logger.js';
import { safeError, SAFE, type SafeError } from './redact.js';

/** How often a failure that keeps happening is logged again, with a count. */
export const REPEAT_INTERVAL_MS = 30_000;

/**
 * Tests shorten the interval for a whole process (a `conveyor serve` child) with this variable; it is not a
 * configuration key and nothing documents it for operators.
 */
const TEST_INTERVAL_VARIABLE = 'CONVEYOR_TEST_LOG_REPEAT_MS';

function defaultInterval(): number {
  const fromEnv = Number(process.env[TEST_INTERVAL_VARIABLE]);
  return Number.isFinite(fromEnv) && fromEnv > 0 ? fromEnv : REPEAT_INTERVAL_MS;
}

export type ErrorSummary = Omit<SafeError, 'type' | 'stack' | 'cause'>;

/**
 * The first line of an error's safe message (safeError: never a value a database error may quote), its code,
 * errno, SQL state and statement shape: no stack, no properties a driver may have attached.
 */
export function summarizeError(err: unknown): ErrorSummary {
  const safe = safeError(err, false);
  // An error with no code that wraps one (the store's DatabaseUnavailable and DatabaseBusy wrap the driver's
  // error): the summary names both messages, and the code, errno and statement are the wrapped error's.
  const cause = safe.code === undefined ? safe.cause : undefined;
  const { message, code, errno, sqlState, statement } = cause ? { ...cause, message: `${safe.message.split('\n')[0].trim()}: ${cause.message}` } : safe;
  const e = err as { name?: unknown } | null | undefined;
  const summary: ErrorSummary = { [SAFE]: true, message: message.split('\n')[0].trim() || (typeof e?.name === 'string' ? e.name : 'error') };
  if (code !== undefined) summary.code = String(code);
  // A driver's error number (MySQL's 1062); not Node's negative system ones, which the code already names.
  if (errno !== undefined && errno > 0) summary.errno = errno;
  if (sqlState !== undefined) summary.sqlState = sqlState;
  if (statement !== undefined) summary.statement = statement;
  return summary;
}

export interface RepeatedFailureOptions {
  /** What fails, as the subject of the log lines: "database connection", "catalog refresh". */
  what: string;
  /** Level of the failure lines; "recovered" is always info. */
  level?: 'warn' | 'error';
  /** Said once, on the first line: what the service does meanwhile. */
  consequence?: string;
  /** Fields on every line, e.g. `{ reaper: 'expiry' }`. */
  fields?: Record<string, unknown>;
  /** Whether the first line should carry the stack (unexpected errors; never for connection failures). */
  withStack?: (err: unknown) => boolean;
  intervalMs?: number;
  now?: () => number;
}

/**
 * A failure that repeats while something is down (a database, Redis): logged once when it starts, with the
 * error's message and code; then at most once per interval with how many failures there were; then one
 * "recovered" line saying how long it lasted and how many failures it took. Nothing is logged per failure, so
 * a poll every second while the database is away costs one line per 30 s.
 */
export class RepeatedFailure {
  private failures = 0;
  private sinceReport = 0;
  private startedAt = 0;
  private reportedAt = 0;
  private readonly intervalMs: number;
  private readonly now: () => number;

  constructor(
    private readonly logger: Logger,
    private readonly options: RepeatedFailureOptions,
  ) {
    this.intervalMs = options.intervalMs ?? defaultInterval();
    this.now = options.now ?? Date.now;
  }

  /** Whether the last outcome was a failure. */
  get failing(): boolean {
    return this.failures > 0;
  }

  fail(err: unknown): void {
    const now = this.now();
    const level = this.options.level ?? 'warn';
    const summary = summarizeError(err);
    if (this.failures === 0) {
      this.failures = 1;
      this.sinceReport = 0;
      this.startedAt = now;
      this.reportedAt = now;
      // The stack's first line repeats the message: safeError rebuilds it from the safe one.
      const stack = this.options.withStack?.(err) ? safeError(err).stack : undefined;
      const { consequence, what } = this.options;
      this.logger[level]({ ...this.options.fields, err: stack ? { ...summary, stack } : summary }, consequence ? `${what} failed; ${consequence}` : `${what} failed`);
      return;
    }
    this.failures += 1;
    this.sinceReport += 1;
    if (now - this.reportedAt < this.intervalMs) return;
    this.logger[level](
      { ...this.options.fields, err: summary, failures: this.failures, failuresSinceLastLine: this.sinceReport, failingForSeconds: seconds(now - this.startedAt) },
      `${this.options.what} still failing`,
    );
    this.reportedAt = now;
    this.sinceReport = 0;
  }

  ok(): void {
    if (this.failures === 0) return;
    const now = this.now();
    this.logger.info({ ...this.options.fields, failures: this.failures, downForSeconds: seconds(now - this.startedAt) }, `${this.options.what} recovered`);
    this.failures = 0;
    this.sinceReport = 0;
  }
}

const seconds = (ms: number) => Math.round(ms / 100) / 10;
