import type { Counter, Meter } from '@opentelemetry/api';
import { REAPER_KINDS, REAPER_OUTCOMES, type ReaperKind, type ReaperOutcome, type ReaperRunSink } from '../reapers/reapers.js';

/** conveyor_reaper_runs_total{reaper,outcome} and conveyor_reaper_last_run_timestamp_seconds{reaper} (last successful run). */
export class ReaperMetrics implements ReaperRunSink {
  private readonly runs: Counter;
  private readonly lastRun = new Map<ReaperKind, number>();

  constructor(meter: Meter) {
    this.runs = meter.createCounter('conveyor_reaper_runs_total', { description: 'Reaper runs by reaper and outcome (success, error, skipped)' });
    // Every series from the start, at 0: Prometheus' increase() cannot see a counter's first increment, so a
    // series born at 1 (the first success of an instance that usually skips) would hide that success from
    // the alert that looks for runs skipping or failing without any success.
    for (const reaper of REAPER_KINDS) for (const outcome of REAPER_OUTCOMES) this.runs.add(0, { reaper, outcome });
    const last = meter.createObservableGauge('conveyor_reaper_last_run_timestamp_seconds', {
      description: 'Unix time of the last successful run of each reaper on this instance',
      unit: 's',
    });
    last.addCallback((result) => {
      for (const [reaper, ms] of this.lastRun) result.observe(ms / 1000, { reaper });
    });
  }

  ran(kind: ReaperKind, outcome: ReaperOutcome, atMs: number): void {
    this.runs.add(1, { reaper: kind, outcome });
    if (outcome === 'success') this.lastRun.set(kind, atMs);
  }
}
