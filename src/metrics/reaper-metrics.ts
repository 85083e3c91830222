import type { Counter, Meter } from '@opentelemetry/api';
import type { ReaperKind, ReaperOutcome, ReaperRunSink } from '../reapers/reapers.js';

/** conveyor_reaper_runs_total{reaper,outcome} and conveyor_reaper_last_run_timestamp_seconds{reaper} (last successful run). */
export class ReaperMetrics implements ReaperRunSink {
  private readonly runs: Counter;
  private readonly lastRun = new Map<ReaperKind, number>();

  constructor(meter: Meter) {
    this.runs = meter.createCounter('conveyor_reaper_runs_total', { description: 'Reaper runs by reaper and outcome (success, error, skipped)' });
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
