import type { Knex } from 'knex';
import { announceRedelivery, attemptRules, VISIBILITY_EXPIRED } from '../queue/attempts.js';
import type { AttemptsObserver } from '../queue/attempts-observer.js';
import { backoffOf } from '../queue/backoff.js';
import { DomainError } from '../queue/errors.js';
import type { QueueMetrics } from '../queue/metrics-port.js';
import type { TopicSignals } from '../queue/topic-signals.js';
import type { Logger } from '../log/logger.js';
import { repairStranded } from '../store/deliveries/stranded.js';
import { LeaseBusy, withLease } from '../store/leases.js';
import { deleteExpiredMessages, expireDeliveries, expireMessages, loggedTopics, releaseOverdue, trimAudit, trimLog, type TopicCounts } from '../store/reaping.js';
import { getTopicConfig, listTopicConfigs, type TopicConfigRow } from '../store/topic-configs.js';
import { repairLines } from '../store/ordering/lines.js';
import { joinUnjoinedLines } from '../store/ordering/unjoined.js';
import type { Config } from '../config/schema.js';

export const REAPER_KINDS = ['expiry', 'delete', 'archive'] as const;
export type ReaperKind = (typeof REAPER_KINDS)[number];
export const REAPER_OUTCOMES = ['success', 'error', 'skipped'] as const;
export type ReaperOutcome = (typeof REAPER_OUTCOMES)[number];

/** Where runs are reported (conveyor_reaper_runs_total, conveyor_reaper_last_run_timestamp_seconds). */
export interface ReaperRunSink {
  ran(kind: ReaperKind, outcome: ReaperOutcome, atMs: number): void;
}

export const noopReaperRunSink: ReaperRunSink = { ran: () => {} };

/** What one run did: messages expired or deleted, archive entries trimmed; the archive run also trims the audit log. */
export interface ReapResult {
  count: number;
  auditDeleted?: number;
}

/** A run's answer as the HTTP API and `conveyor reap` give it: `{expired}`, `{deleted}` or `{deleted, audit_deleted}`. */
export function reapReport(kind: ReaperKind, result: ReapResult): Record<string, number> {
  if (kind === 'expiry') return { expired: result.count };
  if (kind === 'delete') return { deleted: result.count };
  return { deleted: result.count, audit_deleted: result.auditDeleted ?? 0 };
}

export interface ReapersDeps {
  db: Knex;
  metrics: QueueMetrics;
  runs?: ReaperRunSink;
  now?: () => number;
  /** audit.retention_days: the archive run removes audit records older than this; 0 (or absent) keeps them. */
  auditRetentionDays?: number;
  /** Where a repair of what an enqueue racing a group's (un)registration left is reported. */
  logger?: Logger;
  /**
   * queue.dlq_threshold and the retry backoff defaults, for deliveries whose visibility timeout passed (a failed
   * attempt, as on a dequeue).
   */
  attempts: Pick<Config['queue'], 'dlq_threshold' | 'retry_backoff_seconds' | 'retry_backoff_max_seconds'>;
  /** Wakes this instance's waiting consumers of topics that got messages back (absent in a one-shot run). */
  signals?: TopicSignals;
  /** Hears of the messages released after their visibility timeout (tracing, when on). */
  attemptsObserver?: AttemptsObserver;
}

const sum = (counts: TopicCounts) => [...counts.values()].reduce((a, b) => a + b, 0);

/**
 * The three reapers (docs/consumer-groups-replay.md, Reapers). Each run holds a lease row (src/store/leases.ts: `reaper:<kind>`,
 * renewed while it runs, the same on both engines and on every node of a Galera cluster), so two instances,
 * or an instance and `conveyor reap`, never run one reaper at once; a run whose lease was lost stops before
 * its next batch. The work itself goes in bounded batches of short transactions. Topic settings are read from the database,
 * not a cache, so a one-shot `conveyor reap` needs nothing else.
 */
export class Reapers {
  private readonly now: () => number;
  private readonly runs: ReaperRunSink;
  private readonly stopping = new AbortController();

  constructor(private readonly deps: ReapersDeps) {
    this.now = deps.now ?? Date.now;
    this.runs = deps.runs ?? noopReaperRunSink;
  }

  /**
   * Runs one reaper and returns what it did. `waitMs`: how long to wait for a run on another instance to
   * finish (manual runs wait, then usually find nothing left; scheduled runs pass 0 and skip).
   */
  async run(kind: ReaperKind, waitMs: number): Promise<ReapResult> {
    try {
      // The stop signal also ends a wait for a run elsewhere: a shutdown answers that request 503 at once.
      const result = await withLease(this.deps.db, `reaper:${kind}`, { waitMs, signal: this.stopping.signal }, (lease) => this.work(kind, AbortSignal.any([lease.signal, this.stopping.signal])));
      this.runs.ran(kind, 'success', Date.now());
      return result;
    } catch (err) {
      // Neither a failure nor a skip: the batches done so far stay done, the next run takes the rest.
      if (this.stopping.signal.aborted) throw new DomainError('unavailable', `the server is shutting down; the ${kind} reaper stopped after its last batch`);
      if (err instanceof LeaseBusy) {
        this.runs.ran(kind, 'skipped', Date.now());
        throw new DomainError('unavailable', `another run of the ${kind} reaper is still in progress; try again later`);
      }
      this.runs.ran(kind, 'error', Date.now());
      throw err;
    }
  }

  /**
   * Shutdown: a run in progress stops before its next batch (each batch is a transaction of its own), so a
   * run over a large backlog does not hold the process past its grace period.
   */
  stop(): void {
    this.stopping.abort();
  }

  private async work(kind: ReaperKind, signal: AbortSignal): Promise<ReapResult> {
    if (kind === 'expiry') return { count: await this.expire(signal) };
    if (kind === 'delete') return { count: await this.deleteExpired(signal) };
    return { count: await this.trimArchive(signal), auditDeleted: await this.trimAudit(signal) };
  }

  /**
   * First the repair of messages an enqueue racing a consumer group's registration or unregistration left
   * without their deliveries or with a removed group's (store/deliveries/stranded.ts), so they expire like
   * every other; then the release of deliveries whose visibility timeout passed; then pending messages past
   * their TTL, then per-group deliveries of messages some group already started.
   */
  private async expire(signal: AbortSignal): Promise<number> {
    const now = this.now();
    const configs = await listTopicConfigs(this.deps.db);
    const replayable = new Set(configs.filter((c) => c.replayable).map((c) => c.topic));
    const repaired = await repairStranded(this.deps.db, now, (topic) => replayable.has(topic), signal);
    for (const [topic, deliveries] of repaired.adopted) {
      this.deps.logger?.warn({ topic, deliveries }, 'gave messages stored during a consumer group registration the deliveries their enqueue missed');
    }
    if (repaired.dropped > 0) this.deps.logger?.warn({ messages: repaired.dropped }, 'finished messages left with deliveries of an unregistered consumer group');
    // First: a message that comes back after its TTL passed expires in this same run.
    await this.releaseOverdue(now, configs, (topic) => replayable.has(topic), signal);
    const messages = await expireMessages(this.deps.db, now, signal);
    const deliveries = await expireDeliveries(this.deps.db, now, (topic) => replayable.has(topic), signal);
    // Ordering keys whose head expired, or left without its hand-over: the next message of each goes ahead.
    for (const topic of await repairLines(this.deps.db, now)) this.deps.signals?.signal(topic);
    // Lines an enqueue stored its messages in and did not join (its instance died in between): they get a head.
    const joined = await joinUnjoinedLines(this.deps.db, now);
    if (joined.size > 0) this.deps.logger?.warn({ topics: [...joined] }, 'joined ordering keys whose messages an interrupted enqueue left without a head');
    for (const topic of joined) this.deps.signals?.signal(topic);
    this.count('expired', messages);
    this.count('expired', deliveries);
    return sum(messages) + sum(deliveries);
  }

  /**
   * Deliveries whose visibility timeout passed with no dequeue since on their topic: each is a failed attempt
   * (retried, dead-lettered or failed, as a dequeue would have decided), so a topic whose consumers died shows
   * them pending again and its dead letters reach `<topic>.dlq`. Not counted as expired: they are redelivered.
   * A failure here is logged and the run goes on to TTL expiry, which is its own job (docs/consumer-groups-replay.md, Reapers); a lost
   * lease or a shutdown still ends the run.
   */
  private async releaseOverdue(now: number, configs: TopicConfigRow[], replayable: (topic: string) => boolean, signal: AbortSignal): Promise<void> {
    const byTopic = new Map(configs.map((c) => [c.topic, c]));
    const policy = {
      dlqThreshold: this.deps.attempts.dlq_threshold,
      topicMaxRetries: (topic: string) => byTopic.get(topic)?.max_retries,
      backoffOf: (topic: string) => backoffOf(byTopic.get(topic), this.deps.attempts),
    };
    let released;
    try {
      released = await releaseOverdue(this.deps.db, now, attemptRules(policy, now), VISIBILITY_EXPIRED, replayable, signal);
    } catch (err) {
      if (signal.aborted) throw err;
      this.deps.logger?.warn({ err }, 'could not release deliveries whose visibility timeout passed; expiring messages past their TTL all the same');
      return;
    }
    for (const result of released) announceRedelivery(result, this.deps.metrics, this.deps.signals, this.deps.attemptsObserver);
    if (released.length > 0) {
      this.deps.logger?.info({ messages: released.length, topics: new Set(released.map((r) => r.topic)).size }, 'released deliveries whose visibility timeout passed without a dequeue');
    }
  }

  private async deleteExpired(signal: AbortSignal): Promise<number> {
    const deleted = await deleteExpiredMessages(this.deps.db, signal);
    this.count('deleted', deleted);
    return sum(deleted);
  }

  /**
   * Each replayable topic with a window keeps only entries created inside it; a topic that is no longer
   * replayable (or has no configuration any more) keeps none: nothing can list or replay them, and a topic
   * made replayable again would otherwise list and replay payloads kept past every retention.
   */
  private async trimArchive(signal: AbortSignal): Promise<number> {
    const now = this.now();
    const windowStart = new Map<string, number>();
    for (const config of await listTopicConfigs(this.deps.db)) {
      if (config.replayable) windowStart.set(config.topic, config.replay_window_seconds == null ? -Infinity : now - config.replay_window_seconds * 1000);
    }
    let deleted = 0;
    for (const topic of await loggedTopics(this.deps.db)) {
      let start = windowStart.get(topic);
      // Read again before a whole log goes: the topic may have been made replayable since the list above.
      if (start === undefined && (await getTopicConfig(this.deps.db, topic))?.replayable) continue;
      start ??= Number.MAX_SAFE_INTEGER;
      if (start !== -Infinity) deleted += await trimLog(this.deps.db, topic, start, signal);
    }
    return deleted;
  }

  /** Audit records past audit.retention_days (docs/security.md, "Audit log"). */
  private trimAudit(signal: AbortSignal): Promise<number> {
    const days = this.deps.auditRetentionDays ?? 0;
    return days > 0 ? trimAudit(this.deps.db, this.now() - days * 86_400_000, signal) : Promise.resolve(0);
  }

  private count(event: 'expired' | 'deleted', counts: TopicCounts): void {
    for (const [topic, n] of counts) this.deps.metrics.message(event, topic, n);
  }
}
