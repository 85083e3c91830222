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

/** The archive log of replayable topics and replay from it (contract §5). */
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
   */
  async replay(topicName: unknown, fromTime: unknown): Promise<{ topic: string; enqueued: number; fromTime: string }> {
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
    const enqueued = await this.stream(topic, from);
    if (enqueued > 0) this.deps.metrics.message('replayed', topic, enqueued);
    return { topic, enqueued, fromTime: given ? String(fromTime) : '' };
  }

  private async stream(topic: string, from: number | null): Promise<number> {
    const upTo = await lastReplayCursor(this.deps.db, topic);
    if (!upTo) return 0;
    const pageSize = this.deps.replayPageSize ?? 100;
    let after: ReplayCursor | null = null;
    let enqueued = 0;
    for (;;) {
      const page = await replayPage(this.deps.db, topic, from, after, upTo, pageSize);
      if (page.length === 0) return enqueued;
      const { stored, full } = await this.deps.messages.reenqueue(
        page.map((entry) => ({ topic, key: entry.msg_key, payload: entry.payload, metadata: entry.metadata })),
      );
      enqueued += stored;
      if (full || page.length < pageSize) return enqueued;
      const last = page[page.length - 1];
      after = { createdAt: last.created_at, id: last.id };
    }
  }

  private isReplayable(topic: string): boolean {
    return this.deps.catalog.config(topic)?.replayable === true;
  }
}
