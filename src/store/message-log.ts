import type { Knex } from 'knex';
import { withDbRetry } from './retry.js';

export interface LogEntryRow {
  id: string;
  topic: string;
  msg_key: string | null;
  ordering_key: string | null;
  payload: Buffer;
  metadata: string;
  retry_count: number;
  original_topic: string;
  created_at: number;
  acked_at: number;
}

const LOG_COLUMNS = ['id', 'topic', 'msg_key', 'ordering_key', 'payload', 'metadata', 'retry_count', 'original_topic', 'created_at', 'acked_at'];

function normalise(raw: Record<string, unknown>): LogEntryRow {
  return {
    id: String(raw.id),
    topic: String(raw.topic),
    msg_key: raw.msg_key == null ? null : String(raw.msg_key),
    ordering_key: raw.ordering_key == null ? null : String(raw.ordering_key),
    payload: Buffer.isBuffer(raw.payload) ? raw.payload : Buffer.from(String(raw.payload ?? '')),
    metadata: String(raw.metadata ?? '{}'),
    retry_count: Number(raw.retry_count),
    original_topic: String(raw.original_topic ?? ''),
    created_at: Number(raw.created_at),
    acked_at: Number(raw.acked_at),
  };
}

/**
 * Copies acked messages into the archive log inside the ack's own transaction: INSERT ... SELECT, so payloads
 * never travel through Node and a rolled-back ack archives nothing.
 */
export async function archiveMessages(trx: Knex.Transaction, ids: string[], ackedAt: number): Promise<void> {
  for (let i = 0; i < ids.length; i += 500) {
    const select = trx('messages')
      .select('id', 'topic', 'msg_key', 'ordering_key', 'payload', 'metadata', 'retry_count', 'original_topic', 'created_at', trx.raw('? AS acked_at', [ackedAt]))
      .whereIn('id', ids.slice(i, i + 500))
      .toSQL();
    await trx.raw(`INSERT INTO message_log (${LOG_COLUMNS.join(', ')}) ${select.sql}`, select.bindings as Knex.RawBinding[]);
  }
}

/** A topic's log, oldest acknowledgement first. */
export async function listLog(db: Knex, topic: string, limit: number, offset: number): Promise<{ items: LogEntryRow[]; total: number }> {
  const [rows, count] = await Promise.all([
    db('message_log').select(LOG_COLUMNS).where({ topic }).orderBy([{ column: 'acked_at' }, { column: 'id' }]).limit(limit).offset(offset),
    db('message_log').where({ topic }).count({ n: '*' }).first(),
  ]);
  return { items: rows.map(normalise), total: Number(count?.n ?? 0) };
}

/**
 * One batch of deletes by id, retried. When an attempt lost the answer to its (autocommit) DELETE, the ids
 * that are no longer there are counted as deleted: they were there a moment ago, and a re-run deletes none.
 */
function deleteLogIds(db: Knex, ids: string[]): Promise<number> {
  return withDbRetry(db, async (attempt) => {
    const deleted = await db('message_log').whereIn('id', ids).delete();
    return attempt.uncertain ? ids.length : deleted;
  });
}

/** Deletes a topic's entries acknowledged before `before`, 1,000 at a time so no delete holds long locks. */
export async function deleteLogBefore(db: Knex, topic: string, before: number, batchSize = 1000): Promise<number> {
  let deleted = 0;
  for (;;) {
    const ids = await db('message_log').where({ topic }).andWhere('acked_at', '<', before).orderBy('acked_at').limit(batchSize).pluck('id');
    if (ids.length === 0) return deleted;
    deleted += await deleteLogIds(db, ids);
    if (ids.length < batchSize) return deleted;
  }
}

/**
 * Archive reaper: entries created before the window start can never be replayed again.
 * `signal`: the reaper's lease was lost; stop before the next batch.
 */
export async function trimLogCreatedBefore(db: Knex, topic: string, before: number, batchSize = 1000, signal?: AbortSignal): Promise<number> {
  let deleted = 0;
  for (;;) {
    signal?.throwIfAborted();
    const ids = await db('message_log').where({ topic }).andWhere('created_at', '<', before).orderBy('created_at').limit(batchSize).pluck('id');
    if (ids.length === 0) return deleted;
    deleted += await deleteLogIds(db, ids);
    if (ids.length < batchSize) return deleted;
  }
}

export interface ReplayCursor {
  createdAt: number;
  id: string;
}

/** The newest entry in replay order: where a replay stops, so messages it re-enqueues are never replayed again. */
export async function lastReplayCursor(db: Knex, topic: string): Promise<ReplayCursor | null> {
  const row = await db('message_log').where({ topic }).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).first('created_at', 'id');
  return row ? { createdAt: Number(row.created_at), id: String(row.id) } : null;
}

/**
 * One page of replay (keyset paging on message_log_replay): entries created at or after `from`, in
 * (created_at, id) order, after `after` and up to `upTo`.
 */
export async function replayPage(
  db: Knex,
  topic: string,
  from: number | null,
  after: ReplayCursor | null,
  upTo: ReplayCursor,
  limit: number,
): Promise<LogEntryRow[]> {
  const query = db('message_log').select(LOG_COLUMNS).where({ topic });
  if (from !== null) query.andWhere('created_at', '>=', from);
  if (after) {
    query.andWhere((q) =>
      q.where('created_at', '>', after.createdAt).orWhere((q2) => q2.where('created_at', '=', after.createdAt).andWhere('id', '>', after.id)),
    );
  }
  query.andWhere((q) =>
    q.where('created_at', '<', upTo.createdAt).orWhere((q2) => q2.where('created_at', '=', upTo.createdAt).andWhere('id', '<=', upTo.id)),
  );
  const rows = await query.orderBy([{ column: 'created_at' }, { column: 'id' }]).limit(limit);
  return rows.map(normalise);
}
