import type { Knex } from 'knex';
import { deleteAuditRowsBefore } from './audit-log.js';
import { listAllConsumerGroups } from './consumer-groups.js';
import { lockMessages, settleMessages } from './deliveries/complete.js';
import { releaseExpiredDeliveries } from './deliveries/settle.js';
import { trimLogCreatedBefore } from './message-log.js';
import { releaseExpired, type AttemptResult, type AttemptRules } from './messages/settle.js';
import { retryTransaction } from './retry.js';

const BATCH = 1000;
/** Overdue messages given back per topic (and per group) in one run. */
const OVERDUE_PER_RUN = 10_000;
/**
 * A group's overdue deliveries are given back 100 per transaction, not 1,000: each holds its message rows
 * locked while it settles them one by one (several statements each), and the other groups' acks of those
 * messages wait for it (1,000 measured 0.8-1.4 s of waiting on an idle MariaDB).
 */
const GROUP_BATCH = 100;

/**
 * Every batch is one transaction under the store's retry policy; a re-run of a batch whose commit answer was
 * lost finds its rows already changed and changes nothing (each statement re-checks status and deadline),
 * and the batch is counted once either way (from the rows it selected). `signal`: aborted when the run's
 * lease was lost (src/store/leases.ts); the run stops before its next batch rather than race a new holder.
 */

/** Rows affected per topic, for the per-topic counters. */
export type TopicCounts = Map<string, number>;

function countTopics(counts: TopicCounts, rows: Array<{ topic: string }>): void {
  for (const row of rows) counts.set(String(row.topic), (counts.get(String(row.topic)) ?? 0) + 1);
}

/**
 * Marks pending messages whose TTL passed as expired, 1,000 per short transaction. reap_at is expires_at
 * for pending rows (migrations/20261122070000_queue_index.ts), so index messages_reap finds exactly them.
 * A fan-out message that no group has started takes all its deliveries with it.
 */
export async function expireMessages(db: Knex, now: number, signal?: AbortSignal): Promise<TopicCounts> {
  const expired: TopicCounts = new Map();
  for (;;) {
    signal?.throwIfAborted();
    const rows = await db('messages').select('id', 'topic').where('reap_at', '>', 0).andWhere('reap_at', '<=', now).limit(BATCH);
    if (rows.length === 0) return expired;
    const ids = rows.map((r: { id: string }) => String(r.id));
    await retryTransaction(db, async (trx) => {
      await trx('messages').whereIn('id', ids).where({ status: 'pending' }).andWhere('expires_at', '<=', now).update({ status: 'expired' });
      await trx('deliveries').whereIn('message_id', ids).where({ status: 'pending' }).update({ status: 'expired' });
    });
    countTopics(expired, rows);
    if (rows.length < BATCH) return expired;
  }
}

/**
 * Per-group TTL: pending deliveries of messages some group already started (index deliveries_expiry). A
 * message that no group still works on afterwards becomes expired (or leaves, when the others are done).
 */
export async function expireDeliveries(db: Knex, now: number, replayable: (topic: string) => boolean, signal?: AbortSignal): Promise<TopicCounts> {
  const expired: TopicCounts = new Map();
  for (;;) {
    signal?.throwIfAborted();
    const rows = await db('deliveries').select('message_id', 'consumer_group', 'topic').where({ status: 'pending' }).andWhere('expires_at', '<=', now).limit(BATCH);
    if (rows.length === 0) return expired;
    const ids = [...new Set(rows.map((r: { message_id: string }) => String(r.message_id)))];
    await retryTransaction(db, async (trx) => {
      const locked = await lockMessages(trx, ids);
      await trx('deliveries').whereIn('message_id', ids).where({ status: 'pending' }).andWhere('expires_at', '<=', now).update({ status: 'expired' });
      await settleMessages(trx, locked, replayable, now);
    });
    countTopics(expired, rows);
    if (rows.length < BATCH) return expired;
  }
}

/**
 * Visibility expiry where nobody dequeues: a dequeue releases its topic's overdue deliveries before it
 * claims, but a topic whose consumers all died would keep them `processing` (and never dead-letter them)
 * until the next one. Each topic without a consumer group (dead-letter topics included) releases its
 * overdue messages, each registered group its overdue deliveries, in batches of 1,000, exactly as a
 * dequeue there would (the same statements: safe beside dequeues and other instances; a group unregistered
 * since the list was read is left alone, see releaseExpiredDeliveries).
 */
export async function releaseOverdue(
  db: Knex,
  now: number,
  rules: AttemptRules,
  error: string,
  replayable: (topic: string) => boolean,
  signal?: AbortSignal,
): Promise<AttemptResult[]> {
  const released: AttemptResult[] = [];
  // At most OVERDUE_PER_RUN of a topic (or group) per run: one whose consumers died under a backlog of millions
  // must not hold the run's lease for minutes while every other topic waits for its TTL expiry; the next run
  // goes on where this one stopped.
  const drain = async (size: number, release: (size: number) => Promise<AttemptResult[]>) => {
    for (let batches = 0; batches < OVERDUE_PER_RUN / size; batches++) {
      signal?.throwIfAborted();
      const batch = await release(size);
      released.push(...batch);
      if (batch.length < size) return;
    }
  };
  const groups = await listAllConsumerGroups(db);
  const fanOut = new Set(groups.map((g) => g.topic));
  for (const topic of await messageTopics(db, signal)) {
    if (!fanOut.has(topic)) await drain(BATCH, (size) => releaseExpired(db, topic, now, rules, error, size));
  }
  for (const { topic, consumer_group } of groups) {
    await drain(GROUP_BATCH, (size) => releaseExpiredDeliveries(db, topic, consumer_group, rules, error, { replayable, now }, size));
  }
  return released;
}

/** The topics that hold messages: one index seek each (messages_queue begins with topic), not a scan of the table. */
async function messageTopics(db: Knex, signal?: AbortSignal): Promise<string[]> {
  const topics: string[] = [];
  for (let after = ''; ; ) {
    signal?.throwIfAborted();
    const row = await db('messages').select('topic').where('topic', '>', after).orderBy('topic').first();
    if (!row) return topics;
    after = String(row.topic);
    topics.push(after);
  }
}

/** Deletes expired messages and their deliveries, 1,000 per short transaction (reap_at 0: index messages_reap). */
export async function deleteExpiredMessages(db: Knex, signal?: AbortSignal): Promise<TopicCounts> {
  const deleted: TopicCounts = new Map();
  for (;;) {
    signal?.throwIfAborted();
    const rows = await db('messages').select('id', 'topic').where({ reap_at: 0 }).limit(BATCH);
    if (rows.length === 0) return deleted;
    const ids = rows.map((r: { id: string }) => String(r.id));
    await retryTransaction(db, async (trx) => {
      await trx('deliveries').whereIn('message_id', ids).delete();
      await trx('messages').whereIn('id', ids).where({ status: 'expired' }).delete();
    });
    countTopics(deleted, rows);
    if (rows.length < BATCH) return deleted;
  }
}

/** The topics that have archive log entries: a loose walk of `message_log_replay` (topic first). */
export async function loggedTopics(db: Knex): Promise<string[]> {
  return (await db('message_log').distinct('topic').pluck('topic')).map(String);
}

/** Trims one topic's archive log to its replay window. */
export function trimLog(db: Knex, topic: string, windowStart: number, signal?: AbortSignal): Promise<number> {
  return trimLogCreatedBefore(db, topic, windowStart, 1000, signal);
}

/** Trims the audit log to its retention (audit.retention_days), oldest first, in batches. */
export function trimAudit(db: Knex, before: number, signal?: AbortSignal): Promise<number> {
  return deleteAuditRowsBefore(db, before, 1000, signal);
}
