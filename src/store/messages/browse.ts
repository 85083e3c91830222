import type { Knex } from 'knex';
import { UNJOINED } from '../ordering/lines.js';
import { MESSAGE_COLUMNS, normaliseRow, type MessageRow, type MessageStatus } from './rows.js';

export interface Page<T> {
  items: T[];
  total: number;
}

/** A set of topics as the database selects them: exact names and name prefixes (a caller's grants). */
export interface TopicScope {
  names: string[];
  prefixes: string[];
}

export interface MessageFilter {
  topic?: string;
  /** The topics the caller may see (its grants), when not every topic. */
  scope?: TopicScope;
  status?: MessageStatus;
  /** `newest`: the latest enqueued first (ids are UUIDv7, so id order is enqueue order); else queue order. */
  order?: 'oldest' | 'newest';
}

/**
 * Topic names are ASCII below DEL and compared byte by byte (ascii_bin; SQLite's BINARY), so the names that
 * start with a prefix are the range [prefix, prefix + DEL): an index range, with no LIKE wildcards to escape
 * (`_` is a topic character) and no case folding (SQLite's LIKE folds ASCII case).
 */
const AFTER_EVERY_TOPIC_CHARACTER = '\x7f';

function inScope(q: Knex.QueryBuilder, scope: TopicScope): void {
  q.where((any) => {
    if (scope.names.length > 0) any.orWhereIn('topic', scope.names);
    for (const prefix of scope.prefixes) any.orWhere((range) => range.where('topic', '>=', prefix).andWhere('topic', '<', prefix + AFTER_EVERY_TOPIC_CHARACTER));
  });
}

/** Messages in queue order (oldest first) or newest first, optionally of one topic or of the topics in scope, and of one status. */
export async function listMessages(db: Knex, filter: MessageFilter, limit: number, offset: number): Promise<Page<MessageRow>> {
  const { scope } = filter;
  if (filter.topic === undefined && scope && scope.names.length + scope.prefixes.length === 0) return { items: [], total: 0 };
  const scoped = () => {
    const q = db('messages');
    if (filter.topic !== undefined) q.where({ topic: filter.topic });
    else if (scope) inScope(q, scope);
    if (filter.status !== undefined) q.where({ status: filter.status });
    return q;
  };
  const [rows, count] = await Promise.all([
    scoped().select(MESSAGE_COLUMNS).orderBy('id', filter.order === 'newest' ? 'desc' : 'asc').limit(limit).offset(offset),
    scoped().count({ n: '*' }).first(),
  ]);
  return { items: rows.map(normaliseRow), total: Number(count?.n ?? 0) };
}

/** One message by id (`id` normalised, lower case), or null. */
export async function getMessage(db: Knex, id: string): Promise<MessageRow | null> {
  const row = await db('messages').where({ id }).first(MESSAGE_COLUMNS);
  return row ? normaliseRow(row) : null;
}

/** Each existing message's topic, by id (`ids` normalised, lower case). */
export async function findTopicsById(db: Knex, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db('messages').whereIn('id', ids).select('id', 'topic');
  return new Map(rows.map((r: Record<string, unknown>) => [String(r.id).toLowerCase(), String(r.topic)]));
}

export interface StatusCount {
  topic: string;
  status: string;
  count: number;
}

/** Counts by topic and status; an index-only scan of messages_queue. */
export async function countByStatus(db: Knex): Promise<StatusCount[]> {
  const rows = await db('messages').select('topic', 'status').count({ n: '*' }).groupBy('topic', 'status').orderBy(['topic', 'status']);
  return rows.map((r: Record<string, unknown>) => ({ topic: String(r.topic), status: String(r.status), count: Number(r.n) }));
}

/**
 * Since when the first message a claim of each topic would take has been available (its creation, or the end
 * of its delay or backoff): one index seek per topic, never a scan. A delayed message not yet due is waiting
 * for its time, not for a consumer, and is left out.
 */
export async function oldestPendingAvailableSince(db: Knex, topics: string[], now: number): Promise<Map<string, number>> {
  const oldest = new Map<string, number>();
  for (const topic of topics) {
    // messages_queue order: the first index entry, not a sort of the backlog.
    const row = await db('messages').where({ topic, status: 'pending' }).andWhere('visible_at', '<=', now).orderBy(['visible_at', 'id']).first('created_at', 'visible_at');
    if (row) oldest.set(topic, Math.max(Number(row.created_at), Number(row.visible_at)));
  }
  return oldest;
}

/**
 * Pending messages of each topic whose delay or backoff has not passed (those waiting behind the head of
 * their ordering key are not delayed: no time makes them available): one index range per topic.
 */
export async function countDelayed(db: Knex, topics: string[], now: number): Promise<Map<string, number>> {
  const delayed = new Map<string, number>();
  for (const topic of topics) {
    const row = await db('messages').where({ topic, status: 'pending' }).andWhere('visible_at', '>', now).andWhere('visible_at', '<', UNJOINED).count({ n: '*' }).first();
    const n = Number(row?.n ?? 0);
    if (n > 0) delayed.set(topic, n);
  }
  return delayed;
}
