import type { Knex } from 'knex';
import { deleteLogBefore, lastReplayCursor, listLog, replayPage, type LogEntryRow, type ReplayCursor } from '../store/message-log.js';
import type { Catalog } from './catalog.js';
import { DomainError, invalid } from './errors.js';
import type { MessageService } from './messages.js';
import type { QueueMetrics } from './metrics-port.js';
import { parseRfc3339 } from './rfc3339.js';
import { assertTopicName } from './topic-names.js';

export interface ArchiveServiceDeps {
  db: Knex;
  catalog: Catalog;
  messages: MessageService;
  metrics: QueueMetrics;
  now?: () => number;
  /** Log entries read per replay page; payloads can be a megabyte each, so pages stay small. */
  replayPageSize?: number;
}

const unprocessable = (message: string) => new DomainError('failed_precondition', message);

/** The archive log of replayable topics and replay from it (docs/consumer-groups-replay.md, Archive log and replay). */
export class ArchiveService {
  private readonly now: () => number;

  constructor(private readonly deps: ArchiveServiceDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** A topic that is not replayable lists empty, whatever an earlier replayable period left behind. */
  async list(topicName: unknown, limit: number, offset: number): Promise<{ items: LogEntryRow[]; total: number }> {
    const topic = assertTopicName(topicName);
    if (!this.isReplayable(topic)) return { items: [], total: 0 };
    return listLog(this.deps.db, topic, limit, offset);
  }

  async deleteBefore(topicName: unknown, before: unknown): Promise<number> {
    const topic = assertTopicName(topicName);
    const cutoff = parseRfc3339(before);
    if (cutoff === null) throw invalid('before is required and must be an RFC 3339 timestamp, e.g. 2026-11-22T10:00:00Z');
    return deleteLogBefore(this.deps.db, topic, cutoff);
  }

  /**
   * Re-enqueues archived messages created at or after `from_time` (default: the window start; the whole log
   * when the topic has no window). Streams the log in keyset pages, so a large log is never all in memory,
   * and stops at the newest entry that existed when it began.
   *
   * `requestedFrom` in the answer is the requested time, RFC 3339 in UTC with milliseconds (null when none
   * was given); `replayedFrom` the time the replay actually started from: the requested time; without one,
   * the window start (now - replay_window_seconds); without a window, the `created_at` of the oldest entry in
   * the log, or the time of the request when the log is empty (nothing older existed). Replaying again from
   * that time replays the same entries.
   */
  async replay(topicName: unknown, fromTime: unknown): Promise<{ topic: string; enqueued: number; requestedFrom: string | null; replayedFrom: string }> {
    const topic = assertTopicName(topicName);
    const config = this.deps.catalog.config(topic);
    if (!config?.replayable) throw unprocessable(`topic "${topic}" is not replayable`);
    const now = this.now();
    const windowStart = config.replay_window_seconds == null ? null : now - config.replay_window_seconds * 1000;
    const given = fromTime !== undefined && fromTime !== null && fromTime !== '';
    let from = windowStart;
    if (given) {
      const parsed = parseRfc3339(fromTime);
      if (parsed === null) throw unprocessable('from_time must be an RFC 3339 timestamp, e.g. 2026-11-22T10:00:00Z');
      if (windowStart !== null && parsed < windowStart) {
        throw unprocessable(`from_time is before the replay window, which starts at ${new Date(windowStart).toISOString()}`);
      }
      from = parsed;
    }
    const { enqueued, oldest } = await this.stream(topic, from);
    if (enqueued > 0) this.deps.metrics.message('replayed', topic, enqueued);
    const replayedFrom = new Date(from ?? oldest ?? now).toISOString();
    return { topic, enqueued, requestedFrom: given ? replayedFrom : null, replayedFrom };
  }

  /** Replays entries created at or after `from` (all when null); `oldest` is the created_at of the first one read. */
  private async stream(topic: string, from: number | null): Promise<{ enqueued: number; oldest: number | null }> {
    const upTo = await lastReplayCursor(this.deps.db, topic);
    if (!upTo) return { enqueued: 0, oldest: null };
    const pageSize = this.deps.replayPageSize ?? 100;
    let after: ReplayCursor | null = null;
    let enqueued = 0;
    let oldest: number | null = null;
    for (;;) {
      const page = await replayPage(this.deps.db, topic, from, after, upTo, pageSize);
      if (page.length === 0) return { enqueued, oldest };
      oldest ??= page[0].created_at;
      const { stored, full } = await this.deps.messages.reenqueue(
        page.map((entry) => ({ topic, key: entry.msg_key, orderingKey: entry.ordering_key, payload: entry.payload, metadata: entry.metadata })),
      );
      enqueued += stored;
      if (full || page.length < pageSize) return { enqueued, oldest };
      const last = page[page.length - 1];
      after = { createdAt: last.created_at, id: last.id };
    }
  }

  private isReplayable(topic: string): boolean {
    return this.deps.catalog.config(topic)?.replayable === true;
  }
}
