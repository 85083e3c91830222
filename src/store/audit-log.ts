import type { Knex } from 'knex';
import { withDbRetry } from './retry.js';

export interface AuditRow {
  id: number;
  at: number;
  actor_id: string | null;
  actor: string;
  action: string;
  topic: string | null;
  target: string | null;
  result: string;
  status: number | null;
  /** JSON text of an object. */
  details: string;
}

export interface AuditFilter {
  topic?: string;
  /** A username (as recorded), a user id, `anonymous` or a controller resource such as `TopicConfig team-a/orders`. */
  actor?: string;
}

function normalise(raw: Record<string, unknown>): AuditRow {
  return {
    id: Number(raw.id),
    at: Number(raw.at),
    actor_id: raw.actor_id == null ? null : String(raw.actor_id),
    actor: String(raw.actor),
    action: String(raw.action),
    topic: raw.topic == null ? null : String(raw.topic),
    target: raw.target == null ? null : String(raw.target),
    result: String(raw.result),
    status: raw.status == null ? null : Number(raw.status),
    details: String(raw.details ?? '{}'),
  };
}

/**
 * Retried (src/store/retry.ts). The id is the database's, so a re-run after a lost answer looks for the row
 * the lost attempt may have written (same time, actor, action, target and result) rather than write it twice.
 */
export async function insertAuditRow(db: Knex, row: Omit<AuditRow, 'id'>): Promise<void> {
  await withDbRetry(db, async (attempt) => {
    if (attempt.uncertain) {
      const same = await db('audit_log').where({ at: row.at, actor: row.actor, action: row.action, result: row.result }).where((q) => (row.target === null ? q.whereNull('target') : q.where({ target: row.target }))).first('id');
      if (same) return;
    }
    await db('audit_log').insert(row);
  });
}

/**
 * Only a value shaped like a user id is compared with `actor_id`: a username is looked up through
 * `audit_log_actor` alone, in time order, without an OR to merge. (`actor_id` is an ASCII column, too: on
 * MySQL comparing it with a text outside ASCII is an error, not a miss.)
 */
const USER_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function filtered(db: Knex, filter: AuditFilter): Knex.QueryBuilder {
  const query = db('audit_log');
  if (filter.topic !== undefined) query.where({ topic: filter.topic });
  const actor = filter.actor;
  // No actor ends with a space (usernames refuse surrounding whitespace), and MySQL's PAD SPACE collations
  // would find `admin` for `admin `, where SQLite finds nothing: such a value matches nothing on either.
  if (actor !== undefined && actor.endsWith(' ')) query.whereRaw('1 = 0');
  else if (actor !== undefined) {
    query.andWhere((q) => {
      q.where({ actor });
      if (USER_ID.test(actor)) q.orWhere({ actor_id: actor });
    });
  }
  return query;
}

/** Newest first; rows of one millisecond in the order they were written. */
export async function listAuditRows(db: Knex, filter: AuditFilter, limit: number, offset: number): Promise<{ items: AuditRow[]; total: number }> {
  const [rows, count] = await Promise.all([
    filtered(db, filter)
      .select('*')
      .orderBy([
        { column: 'at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(limit)
      .offset(offset),
    filtered(db, filter).count({ n: '*' }).first(),
  ]);
  return { items: rows.map(normalise), total: Number(count?.n ?? 0) };
}

/** Deletes rows written before `before`, 1,000 per statement so no delete holds long locks (archive reaper). */
export async function deleteAuditRowsBefore(db: Knex, before: number, batchSize = 1000, signal?: AbortSignal): Promise<number> {
  let deleted = 0;
  for (;;) {
    signal?.throwIfAborted();
    const ids = await db('audit_log').where('at', '<', before).orderBy('at').limit(batchSize).pluck('id');
    if (ids.length === 0) return deleted;
    // Retried; after a lost answer the ids selected a moment ago are all gone, so they all count.
    deleted += await withDbRetry(db, async (attempt) => {
      const removed = await db('audit_log').whereIn('id', ids).delete();
      return attempt.uncertain ? ids.length : removed;
    });
    if (ids.length < batchSize) return deleted;
  }
}
