import type { Knex } from 'knex';
import { conflictKind, type ConflictKind } from './dialect.js';
import { DatabaseBusy, driverErrorOf, typedError } from './errors.js';

/**
 * One retry policy for every write of the store. What it cures:
 * - InnoDB deadlock victims and Galera certification conflicts (1213). On a multi-primary Galera cluster two
 *   instances writing the same rows through different nodes conflict at COMMIT, a few times a minute under
 *   load; the transaction was rolled back whole, so running it again is always safe.
 * - Lock wait timeouts (1205) and SQLite's SQLITE_BUSY: the statement was refused; the callers' transactions
 *   roll back whole on any error, so again nothing was applied.
 * - A Galera node that left the primary component (1047, "WSREP has not yet prepared node"): it refused the
 *   statement; the pool's next connection may reach it after it rejoined, or a proxy may route elsewhere.
 * - A connection lost under a statement. The server rolls back an open transaction when its connection goes,
 *   except when what was lost is the answer to COMMIT (or to an autocommit statement): then the change may be
 *   stored. Attempts after such a loss see `attempt.uncertain` and each caller makes its re-run harmless;
 *   each write path says how next to its code.
 * Attempts are bounded (ATTEMPTS; between them a jittered backoff doubling from BASE_DELAY_MS, capped at
 * MAX_DELAY_MS: at most 0.81 s of waiting in all, plus the attempts themselves, whose lock waits are bounded
 * by innodb_lock_wait_timeout, db.lock_wait_timeout); when they run out the caller gets DatabaseBusy, which both
 * transports answer as "database busy, retry" (HTTP 503 with Retry-After, gRPC UNAVAILABLE), never a 500.
 * Errors of connecting at all (ECONNREFUSED, pool timeouts) are not retried here: the database is away; they
 * leave as DatabaseUnavailable, which the transports answer "database unavailable" at once.
 */
export const ATTEMPTS = 8;
const BASE_DELAY_MS = 10;
const MAX_DELAY_MS = 250;

export interface Attempt {
  /** 1 for the first run. */
  readonly number: number;
  /**
   * An earlier attempt lost its connection where its commit may have gone through. A re-run must then treat
   * "already done" as its own success: a message id already stored, an ack whose message is gone.
   */
  readonly uncertain: boolean;
}

export const RETRY_OUTCOMES = ['recovered', 'exhausted'] as const;
export type RetryOutcome = (typeof RETRY_OUTCOMES)[number];

/** Where conflicts and retries are counted (conveyor_db_conflicts_total, conveyor_db_retries_total). */
export interface RetryObserver {
  conflict(kind: ConflictKind): void;
  /** An operation that needed at least one retry: recovered, or gave up with DatabaseBusy. */
  retried(outcome: RetryOutcome): void;
}

// Keyed by the knex client, which a pool's Knex instance and its transactions share.
const observers = new WeakMap<object, RetryObserver>();

/** Counts the conflicts and retries of every store call made through `db` (one per server). */
export function observeRetries(db: Knex, observer: RetryObserver): void {
  observers.set(db.client, observer);
}

/** Full jitter over an exponential step: concurrent losers of one conflict spread out instead of colliding again. */
function delayMs(failedAttempt: number): number {
  const ceiling = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** (failedAttempt - 1));
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/**
 * Runs `work` (one transaction or one autocommit statement, never something with effects outside the database)
 * and runs it again after a retryable failure. A database that cannot serve leaves as DatabaseUnavailable, one
 * that kept refusing as DatabaseBusy (src/store/errors.ts); other errors (unique violations, domain refusals)
 * pass through.
 */
export async function withDbRetry<T>(db: Knex, work: (attempt: Attempt) => Promise<T>, attempts = ATTEMPTS): Promise<T> {
  const observer = observers.get(db.client);
  let uncertain = false;
  for (let number = 1; ; number++) {
    try {
      const result = await work({ number, uncertain });
      if (number > 1) observer?.retried('recovered');
      return result;
    } catch (err) {
      // A statement outside a transaction failed with a typed error already (src/store/errors.ts): the policy
      // reads the driver's error it stands for. What leaves here is typed either way.
      const driverError = driverErrorOf(err);
      const kind = conflictKind(driverError);
      if (!kind) throw typedError(err);
      observer?.conflict(kind);
      if (kind === 'connection_lost') uncertain = true;
      if (number >= attempts) {
        observer?.retried('exhausted');
        throw new DatabaseBusy(kind, number, { cause: driverError });
      }
      await new Promise((resolve) => setTimeout(resolve, delayMs(number)));
    }
  }
}

/** One transaction under withDbRetry: the whole transaction is what runs again, never a part of it. */
export function retryTransaction<T>(db: Knex, work: (trx: Knex.Transaction, attempt: Attempt) => Promise<T>, attempts = ATTEMPTS): Promise<T> {
  return withDbRetry(db, (attempt) => db.transaction((trx) => work(trx, attempt)), attempts);
}
