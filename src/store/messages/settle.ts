import type { Knex } from 'knex';
import { canDeleteReturning, engineOf, isUniqueViolation } from '../dialect.js';
import { withConflictRetry } from '../retry.js';
import { normaliseRow, type MessageRow } from './rows.js';

/** What the domain decided for a failed delivery attempt (nack or visibility timeout). */
export type AttemptOutcome = 'retry' | 'dlq' | 'failed';
/** What actually happened: a retry whose key was taken by a newer pending message is superseded (removed). */
export type AttemptResult = { id: string; topic: string; outcome: AttemptOutcome | 'superseded' };
export type DecideAttempt = (row: MessageRow) => AttemptOutcome;

/** Every column but the payload: settling never needs the body, and it can be a megabyte. */
const SETTLE_COLUMNS = [
  'id',
  'topic',
  'msg_key',
  'metadata',
  'status',
  'retry_count',
  'max_retries',
  'last_error',
  'visible_at',
  'expires_at',
  'created_at',
  'original_topic',
  'dlq_moved_at',
];

export const dlqTopicOf = (topic: string) => `${topic}.dlq`;

/**
 * Moves a message back to pending. If another pending message holds its key meanwhile, the unique index
 * refuses the update; the returning message is then superseded by the newer one and removed (contract §2).
 * A failed statement does not end the transaction on either engine.
 */
export async function returnToPending(trx: Knex.Transaction, id: string, changes: Record<string, unknown>): Promise<'pending' | 'superseded'> {
  try {
    await trx('messages').where({ id }).update({ ...changes, status: 'pending', visible_at: 0 });
    return 'pending';
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    await trx('messages').where({ id }).delete();
    return 'superseded';
  }
}

async function applyAttempt(trx: Knex.Transaction, row: MessageRow, outcome: AttemptOutcome, error: string, now: number): Promise<AttemptResult> {
  const attempts = row.retry_count + 1;
  const result = (o: AttemptResult['outcome']): AttemptResult => ({ id: row.id, topic: row.topic, outcome: o });
  if (outcome === 'failed') {
    await trx('messages').where({ id: row.id }).update({ status: 'failed', retry_count: attempts, last_error: error });
    return result('failed');
  }
  if (outcome === 'dlq') {
    // Dead letters wait for an operator: they do not expire (README, "Dead letters").
    await trx('messages').where({ id: row.id }).update({
      topic: dlqTopicOf(row.topic),
      status: 'pending',
      original_topic: row.topic,
      dlq_moved_at: now,
      retry_count: attempts,
      last_error: error,
      visible_at: 0,
      expires_at: null,
    });
    return result('dlq');
  }
  const returned = await returnToPending(trx, row.id, { retry_count: attempts, last_error: error });
  return result(returned === 'pending' ? 'retry' : 'superseded');
}

function lockForSettle(trx: Knex.Transaction, query: Knex.QueryBuilder): Knex.QueryBuilder {
  return engineOf(trx) === 'mysql' ? query.forUpdate() : query;
}

/** Nack: one transaction that locks the processing row, lets the domain decide and applies the decision. */
export async function nackMessage(db: Knex, id: string, error: string, decide: DecideAttempt, now: number): Promise<AttemptResult | null> {
  return withConflictRetry(() =>
    db.transaction(async (trx) => {
      const raw = await lockForSettle(trx, trx('messages').select(SETTLE_COLUMNS).where({ id, status: 'processing' })).first();
      if (!raw) return null;
      const row = normaliseRow(raw);
      return applyAttempt(trx, row, decide(row), error, now);
    }),
  );
}

/**
 * Visibility expiry: processing messages of a topic whose visibility deadline passed count as a failed
 * attempt (contract §3). Runs before each claim; a cheap index probe first so that the common case
 * (nothing expired) costs one indexed read and no transaction.
 */
export async function releaseExpired(db: Knex, topic: string, now: number, decide: DecideAttempt, error: string, limit = 500): Promise<AttemptResult[]> {
  const expired = () => db('messages').where({ topic, status: 'processing' }).andWhere('visible_at', '<=', now);
  if (!(await expired().first('id'))) return [];
  return withConflictRetry(() =>
    db.transaction(async (trx) => {
      let query = expired().transacting(trx).select(SETTLE_COLUMNS).orderBy('visible_at').limit(limit);
      if (engineOf(trx) === 'mysql') query = query.forUpdate().skipLocked();
      const rows = (await query).map(normaliseRow);
      const results: AttemptResult[] = [];
      for (const row of rows) results.push(await applyAttempt(trx, row, decide(row), error, now));
      return results;
    }),
  );
}

export interface AckedMessage {
  id: string;
  topic: string;
}

/**
 * Acks a group-committed batch: locks the processing rows, lets `beforeDelete` copy replayable ones to the
 * archive log in the same transaction, deletes them. Ids that are not processing are simply not returned.
 * Without `beforeDelete`, where the engine has it, one `DELETE ... RETURNING` does all that in one statement
 * (four round trips fewer per batch: BEGIN, the locking SELECT, COMMIT).
 */
export async function ackMessages(
  db: Knex,
  ids: string[],
  beforeDelete?: (trx: Knex.Transaction, acked: AckedMessage[]) => Promise<void>,
): Promise<AckedMessage[]> {
  if (!beforeDelete && (await canDeleteReturning(db))) return withConflictRetry(() => deleteProcessing(db, ids));
  return withConflictRetry(() =>
    db.transaction(async (trx) => {
      const acked: AckedMessage[] = (await lockForSettle(trx, trx('messages').select('id', 'topic').whereIn('id', ids).andWhere({ status: 'processing' }))).map(
        (r: { id: string; topic: string }) => ({ id: String(r.id), topic: String(r.topic) }),
      );
      if (acked.length === 0) return [];
      if (beforeDelete) await beforeDelete(trx, acked);
      await trx('messages')
        .whereIn(
          'id',
          acked.map((a) => a.id),
        )
        .delete();
      return acked;
    }),
  );
}

async function deleteProcessing(db: Knex, ids: string[]): Promise<AckedMessage[]> {
  const del = db('messages').whereIn('id', ids).andWhere({ status: 'processing' }).delete().toSQL();
  const result = await db.raw(`${del.sql} RETURNING id, topic`, del.bindings as Knex.RawBinding[]);
  const rows = (engineOf(db) === 'mysql' ? result[0] : result) as Array<{ id: string; topic: string }>;
  return rows.map((r) => ({ id: String(r.id), topic: String(r.topic) }));
}

export interface RequeueTarget {
  maxRetries: (topic: string) => number;
  expiresAt: (topic: string) => number | null;
}

/** The columns a requeue resets (contract §3): back on the original topic, fresh retries and TTL. */
export function requeueChanges(topic: string, target: RequeueTarget) {
  return {
    topic,
    retry_count: 0,
    max_retries: target.maxRetries(topic),
    original_topic: '',
    dlq_moved_at: null,
    visible_at: 0,
    expires_at: target.expiresAt(topic),
  };
}

/** Requeue of a dead letter to its original topic (contract §3). Null when the id is not a dead letter. */
export async function requeueDeadLetter(db: Knex, id: string, target: RequeueTarget): Promise<{ topic: string; outcome: 'pending' | 'superseded' } | null> {
  return withConflictRetry(() =>
    db.transaction(async (trx) => {
      const row = await lockForSettle(
        trx,
        trx('messages').select('id', 'topic', 'original_topic').where({ id }).andWhere('original_topic', '<>', '').andWhere('topic', 'like', '%.dlq'),
      ).first();
      if (!row) return null;
      const topic = String(row.original_topic);
      const outcome = await returnToPending(trx, id, requeueChanges(topic, target));
      return { topic, outcome };
    }),
  );
}
