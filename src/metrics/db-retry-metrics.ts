import type { Counter, Meter } from '@opentelemetry/api';
import type { ConflictKind } from '../store/dialect.js';
import type { RetryObserver } from '../store/retry.js';

/**
 * conveyor_db_conflicts_total{kind} (every retryable failure seen: deadlock, lock_wait, wsrep_not_ready,
 * connection_lost) and conveyor_db_retries_total{outcome} (store operations that needed a retry: recovered,
 * or exhausted and answered "database busy, retry"). See src/store/retry.ts.
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
  }

  conflict(kind: ConflictKind): void {
    this.conflicts.add(1, { kind });
  }

  retried(outcome: 'recovered' | 'exhausted'): void {
    this.retries.add(1, { outcome });
  }
}
