import type { Attributes, Counter } from '@opentelemetry/api';
import type { MetricsRegistry } from '../metrics/registry.js';
import type { TallyHistogram } from '../metrics/tallies.js';
import type { ReconcileResult } from './reconciler.js';

const RESULTS: readonly ReconcileResult[] = ['success', 'invalid', 'conflict', 'refused', 'error'];

export interface ControllerState {
  /** The kinds it reconciles: each has its counters at 0 from start-up, so no panel or alert says "No data". */
  kinds: readonly string[];
  isLeader(): boolean;
  queueDepth(): number;
  /** Resources per kind by their last reconcile's readiness. */
  readiness(): Map<string, { ready: number; notReady: number }>;
}

const kindAttributes = (kind: string): Attributes => ({ kind });

/** The controller's instruments, on the same registry (and Prometheus text) as the service's. */
export class ControllerMetrics {
  private readonly reconciles: Counter;
  private readonly duration: TallyHistogram;
  private readonly watchRestarts: Counter;

  constructor(registry: MetricsRegistry, state: ControllerState) {
    const meter = registry.meter;
    this.reconciles = meter.createCounter('conveyor_controller_reconciles_total', {
      description: 'Reconciles by kind and result (success, invalid, conflict, refused, error)',
    });
    this.duration = registry.durations('conveyor_controller_reconcile_duration_seconds', 'Reconcile duration by kind');
    this.watchRestarts = meter.createCounter('conveyor_controller_watch_restarts_total', {
      description: 'Watches restarted after an error, a 410 Gone or a silent watch, by kind',
    });
    const depth = meter.createObservableGauge('conveyor_controller_workqueue_depth', { description: 'Keys waiting in the work queue' });
    const leader = meter.createObservableGauge('conveyor_controller_leader', { description: '1 on the replica holding the leader lease, else 0' });
    const managed = meter.createObservableGauge('conveyor_controller_managed_resources', {
      description: 'Custom resources by kind and readiness after their last reconcile (leader only)',
    });
    meter.addBatchObservableCallback(
      (result) => {
        result.observe(depth, state.queueDepth());
        result.observe(leader, state.isLeader() ? 1 : 0);
        for (const [kind, counts] of state.readiness()) {
          result.observe(managed, counts.ready, { kind, ready: 'true' });
          result.observe(managed, counts.notReady, { kind, ready: 'false' });
        }
      },
      [depth, leader, managed],
    );
    for (const kind of state.kinds) {
      for (const result of RESULTS) this.reconciles.add(0, { kind, result });
      this.duration.of(kind, kindAttributes);
      this.watchRestarts.add(0, { kind });
    }
  }

  reconciled(kind: string, result: ReconcileResult, seconds: number): void {
    this.reconciles.add(1, { kind, result });
    this.duration.of(kind, kindAttributes).record(seconds);
  }

  watchRestarted(kind: string): void {
    this.watchRestarts.add(1, { kind });
  }
}
