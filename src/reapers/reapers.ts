import type { Knex } from 'knex';
import { DomainError } from '../queue/errors.js';
import type { QueueMetrics } from '../queue/metrics-port.js';
import { LockBusy, withNamedLock } from '../store/reaper-lock.js';
import { deleteExpiredMessages, expireDeliveries, expireMessages, trimLog, type TopicCounts } from '../store/reaping.js';
import { listTopicConfigs } from '../store/topic-configs.js';

export const REAPER_KINDS = ['expiry', 'delete', 'archive'] as const;
export type ReaperKind = (typeof REAPER_KINDS)[number];
export type ReaperOutcome = 'success' | 'error' | 'skipped';

/** Where runs are reported (conveyor_reaper_runs_total, conveyor_reaper_last_run_timestamp_seconds). */
export interface ReaperRunSink {
  ran(kind: ReaperKind, outcome: ReaperOutcome, atMs: number): void;
}

export const noopReaperRunSink: ReaperRunSink = { ran: () => {} };

export interface ReapersDeps {
  db: Knex;
  metrics: QueueMetrics;
  runs?: ReaperRunSink;
  now?: () => number;
}

const sum = (counts: TopicCounts) => [...counts.values()].reduce((a, b) => a + b, 0);

/**
 * The three maintenance jobs of the spec. Each run holds a cross-instance lock (GET_LOCK on MySQL, a lease
 * row on SQLite), so two instances, or an instance and `conveyor reap`, never run one reaper at once; the
 * work itself goes in bounded batches of short transactions. Topic settings are read from the database,
 * not a cache, so a one-shot `conveyor reap` needs nothing else.
 */
export class Reapers {
  private readonly now: () => number;
  private readonly runs: ReaperRunSink;

  constructor(private readonly deps: ReapersDeps) {
    this.now = deps.now ?? Date.now;
    this.runs = deps.runs ?? noopReaperRunSink;
  }

  /**
   * Runs one reaper and returns its count. `waitMs`: how long to wait for a run on another instance to
   * finish (manual runs wait, then usually find nothing left; scheduled runs pass 0 and skip).
   */
  async run(kind: ReaperKind, waitMs: number): Promise<number> {
    try {
      const count = await withNamedLock(this.deps.db, `reaper:${kind}`, waitMs, () => this.work(kind));
      this.runs.ran(kind, 'success', Date.now());
      return count;
    } catch (err) {
      if (err instanceof LockBusy) {
        this.runs.ran(kind, 'skipped', Date.now());
        throw new DomainError('unavailable', `another run of the ${kind} reaper is still in progress; try again later`);
      }
      this.runs.ran(kind, 'error', Date.now());
      throw err;
    }
  }

  private work(kind: ReaperKind): Promise<number> {
    if (kind === 'expiry') return this.expire();
    if (kind === 'delete') return this.deleteExpired();
    return this.trimArchive();
  }

  /** Pending messages past their TTL, then per-group deliveries of messages some group already started. */
  private async expire(): Promise<number> {
    const now = this.now();
    const replayable = new Set((await listTopicConfigs(this.deps.db)).filter((c) => c.replayable).map((c) => c.topic));
    const messages = await expireMessages(this.deps.db, now);
    const deliveries = await expireDeliveries(this.deps.db, now, (topic) => replayable.has(topic));
    this.count('expired', messages);
    this.count('expired', deliveries);
    return sum(messages) + sum(deliveries);
  }

  private async deleteExpired(): Promise<number> {
    const deleted = await deleteExpiredMessages(this.deps.db);
    this.count('deleted', deleted);
    return sum(deleted);
  }

  /** Each replayable topic with a window keeps only entries created inside it. */
  private async trimArchive(): Promise<number> {
    const now = this.now();
    let deleted = 0;
    for (const config of await listTopicConfigs(this.deps.db)) {
      if (!config.replayable || config.replay_window_seconds == null) continue;
      deleted += await trimLog(this.deps.db, config.topic, now - config.replay_window_seconds * 1000);
    }
    return deleted;
  }

  private count(event: 'expired' | 'deleted', counts: TopicCounts): void {
    for (const [topic, n] of counts) this.deps.metrics.message(event, topic, n);
  }
}
