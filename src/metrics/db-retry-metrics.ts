import type { Counter, Meter } from '@opentelemetry/api';
import { CONFLICT_KINDS, type ConflictKind } from '../store/dialect.js';
import { RETRY_OUTCOMES, type RetryObserver, type RetryOutcome } from '../store/retry.js';

/**
 * conveyor_db_conflicts_total{kind} (every retryable failure seen: deadlock, lock_wait, wsrep_not_ready,
 * connection_lost) and conveyor_db_retries_total{outcome} (store operations that needed a retry: recovered,
 * or exhausted and answered "database busy, retry"). See src/store/retry.ts.
 *
 * Every series starts at 0: conflicts are rare, and a series born at its first conflict hides that conflict from
 * rate() and increase(), which need two samples; the dashboard's Database panels also show 0, not "no data".
 */
export class DbRetryMetrics implements RetryObserver {
  private readonly conflicts: Counter;
  private readonly retries: Counter;

  constructor(meter: Meter) {
    this.conflicts = meter.createCounter('conveyor_db_conflicts_total', {
      description: 'Database failures that the store retries, by kind (deadlock, lock_wait, wsrep_not_ready, connection_lost)',
    });
    this.retries = meter.createCounter('conveyor_db_retries_total', {
      description: 'Store operations that needed a retry, by outcome (recovered, exhausted)',
    });
    for (const kind of CONFLICT_KINDS) this.conflicts.add(0, { kind });
    for (const outcome of RETRY_OUTCOMES) this.retries.add(0, { outcome });
  }

  conflict(kind: ConflictKind): void {
    this.conflicts.add(1, { kind });
  }

  retried(outcome: RetryOutcome): void {
    this.retries.add(1, { outcome });
  }
}
