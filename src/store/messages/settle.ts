import type { Knex } from 'knex';
import { capabilities, capabilitiesOf } from '../capabilities.js';
import { isUniqueViolation } from '../dialect.js';
import { retryTransaction, withDbRetry } from '../retry.js';
import { runInOneTrip, runStatement, type Statement } from '../statement.js';
import { expireStaleKeyHolder, pendingKeyHolder } from './key-holder.js';
import { MESSAGE_COLUMNS, normaliseRow, type MessageRow } from './rows.js';
import { catchUpTopicLinesStatements, leaveLine, leaveLinesOf, leaveTopicLinesStatements, requeueIntoLines, topicLinesHandOver, type Line } from '../ordering/lines.js';
import { storedTraceContext, type StoredTraceContext } from './trace-context.js';

/** What the domain decided for a failed delivery attempt (nack or visibility timeout). */
export type AttemptOutcome = 'retry' | 'dlq' | 'failed';
/**
 * What actually happened: a retry whose key a newer pending message holds is superseded (removed); one that
 * took its key from an older pending message is `displaced` (that one was removed, superseded).
 */
export type AttemptResult = {
  id: string;
  topic: string;
  outcome: AttemptOutcome | 'superseded';
  displaced?: true;
  /** The consumer group whose delivery it was; absent for a plain topic's message. */
  group?: string;
  /** The trace context the message carries, for a span of the attempt (docs/observability.md, Tracing). */
  trace?: StoredTraceContext;
};
/**
 * The domain's rules for a failed attempt, asked per row inside the settling transaction: what happens to
 * it, and when a retry may be claimed again (epoch ms; 0 at once, at the head of the queue as before).
 */
export interface AttemptRules {
  decide(row: MessageRow): AttemptOutcome;
  retryAt(row: MessageRow): number;
}

/** Every column but the payload: settling never needs the body, and it can be a megabyte. */
const SETTLE_COLUMNS = MESSAGE_COLUMNS.filter((column) => column !== 'payload');

export const dlqTopicOf = (topic: string) => `${topic}.dlq`;

/**
 * How a message went back to pending: `displaced` when it took its key from an older pending message, which
 * was removed (superseded); `superseded` when a newer one holds the key, so the returning one was removed.
 */
export type Returned = 'pending' | 'superseded' | 'displaced';

/**
 * Moves a message back to pending. Its key may be held by another pending message meanwhile (the unique index
 * refuses the update): the newer of the two keeps it, so the latest value of a key is what stays (ids
 * are UUIDv7, ordered by enqueue time). A holder whose TTL has passed holds nothing: it is marked
 * expired, as the expiry reaper would. A failed statement does not end the transaction on either engine.
 */
export async function returnToPending(trx: Knex.Transaction, id: string, changes: Record<string, unknown>, now: number): Promise<Returned> {
  // `changes` may set visible_at: a retry delayed by its nack or its backoff stays out of the claim until then.
  const back = () => trx('messages').where({ id }).update({ status: 'pending', visible_at: 0, ...changes });
  try {
    await back();
    return 'pending';
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
  }
  const row = await trx('messages').where({ id }).first('topic', 'msg_key');
  const topic = String(changes.topic ?? row.topic);
  const key = String(row.msg_key);
  await expireStaleKeyHolder(trx, topic, key, now);
  const holder = await lockForSettle(trx, pendingKeyHolder(trx, topic, key)).first('id');
  if (!holder) {
    await back();
    return 'pending';
  }
  if (String(holder.id) < id) {
    await trx('deliveries').where({ message_id: holder.id }).delete();
    await trx('messages').where({ id: holder.id }).delete();
    await back();
    return 'displaced';
  }
  await trx('messages').where({ id }).delete();
  return 'superseded';
}

async function applyAttempt(trx: Knex.Transaction, row: MessageRow, rules: AttemptRules, error: string, now: number): Promise<AttemptResult> {
  const result = await applyOutcome(trx, row, rules, error, now);
  // A retry stays the head of its ordering key's line (the key waits with it); any other outcome ends its turn.
  if (row.ordering_key !== null && result.outcome !== 'retry') await leaveLine(trx, { topic: row.topic, group: '', key: row.ordering_key }, row.id, now);
  return result;
}

async function applyOutcome(trx: Knex.Transaction, row: MessageRow, rules: AttemptRules, error: string, now: number): Promise<AttemptResult> {
  const outcome = rules.decide(row);
  const attempts = row.retry_count + 1;
  const trace = storedTraceContext(row.metadata);
  const result = (o: AttemptResult['outcome']): AttemptResult => (trace ? { id: row.id, topic: row.topic, outcome: o, trace } : { id: row.id, topic: row.topic, outcome: o });
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
  const returned = await returnToPending(trx, row.id, { retry_count: attempts, last_error: error, visible_at: rules.retryAt(row) }, now);
  if (returned === 'superseded') return result('superseded');
  return returned === 'displaced' ? { ...result('retry'), displaced: true } : result('retry');
}

/**
 * A message with deliveries is a fan-out one, settled per group (src/store/deliveries): a plain ack, nack or
 * visibility release never takes it. An instance that has not yet seen a group's registration (its catalog
 * is a moment old) serves the topic as a plain one meanwhile; this keeps its consumers from settling what
 * the group still needs (they may see the message once more, at least once). A count per row, not NOT
 * EXISTS: MariaDB turns that into NOT IN over a materialized scan of every delivery of every topic; this
 * stays a lookup by the primary key's message_id (test/claim-explain.test.ts).
 */
export const WITHOUT_DELIVERIES = '(SELECT COUNT(*) FROM deliveries WHERE deliveries.message_id = messages.id) = 0';

function lockForSettle(trx: Knex.Transaction, query: Knex.QueryBuilder): Knex.QueryBuilder {
  return capabilities(trx).rowLocks ? query.forUpdate() : query;
}

/**
 * What an attempt decided, kept for a re-run after a lost commit answer: the row's attempt count it saw, and
 * the result it was about to report.
 */
export interface Decided<T> {
  retryCount: number;
  result: T;
}

/**
 * After a lost commit answer (attempt.uncertain), was the earlier decision applied? The row no longer
 * processing, or processing with more attempts than that decision saw (applied, then claimed again by
 * someone else), means it committed: answer the earlier result instead of applying a second attempt.
 */
export function appliedEarlier<T>(uncertain: boolean, decided: Decided<T> | undefined, row: { retry_count: number } | null): decided is Decided<T> {
  return uncertain && decided !== undefined && (row === null || row.retry_count > decided.retryCount);
}

/**
 * Nack: one transaction that locks the processing row, lets the domain decide and applies the decision.
 */
export async function nackMessage(db: Knex, id: string, error: string, rules: AttemptRules, now: number): Promise<AttemptResult | null> {
  let decided: Decided<AttemptResult> | undefined;
  return retryTransaction(db, async (trx, attempt) => {
    const raw = await lockForSettle(trx, trx('messages').select(SETTLE_COLUMNS).where({ id, status: 'processing' }).whereRaw(WITHOUT_DELIVERIES)).first();
    const row = raw ? normaliseRow(raw) : null;
    if (appliedEarlier(attempt.uncertain, decided, row)) return decided.result;
    if (!row) return null;
    const result = await applyAttempt(trx, row, rules, error, now);
    decided = { retryCount: row.retry_count, result };
    return result;
  });
}

/**
 * A topic's processing messages whose visibility passed (index messages_queue). A message with deliveries is
 * a fan-out one: `processing` there means some group started it, and its visibility lives in each delivery.
 * The caller's view of which topics have groups can be a moment old (a group registered through another
 * instance, or during an expiry run): such a row is never taken here (WITHOUT_DELIVERIES).
 */
export function overdueMessages(db: Knex, topic: string, now: number): Knex.QueryBuilder {
  return db('messages')
    .where({ topic, status: 'processing' })
    .andWhere('visible_at', '<=', now)
    .whereRaw(WITHOUT_DELIVERIES);
}

/**
 * Visibility expiry: processing messages of a topic whose visibility deadline passed count as a failed
 * attempt. Runs before each claim; a cheap index probe first so that the common case
 * (nothing expired) costs one indexed read and no transaction. A re-run after a lost commit answer that
 * finds nothing left to release reports what the lost attempt released (for the metrics and wake-ups).
 */
export async function releaseExpired(db: Knex, topic: string, now: number, rules: AttemptRules, error: string, limit = 500): Promise<AttemptResult[]> {
  const expired = () => overdueMessages(db, topic, now);
  // The probe runs before every claim, so it is retried too: a lost connection here would fail the dequeue.
  if (!(await withDbRetry(db, () => expired().first('id')))) return [];
  let earlier: AttemptResult[] = [];
  return retryTransaction(db, async (trx, attempt) => {
    let query = expired().transacting(trx).select(SETTLE_COLUMNS).orderBy('visible_at').limit(limit);
    if (capabilities(trx).skipLocked) query = query.forUpdate().skipLocked();
    const rows = (await query).map(normaliseRow);
    if (rows.length === 0 && attempt.uncertain) return earlier;
    const results: AttemptResult[] = [];
    for (const row of rows) results.push(await applyAttempt(trx, row, rules, error, now));
    earlier = results;
    return results;
  });
}

export interface AckedMessage {
  id: string;
  topic: string;
  orderingKey?: string | null;
}

/**
 * One ack of a group-committed batch. With `topic`, the message is settled only while it is on that topic:
 * the caller checked its grant on that topic without reading the message first (an Ack of a delivery made
 * by a Subscribe stream of this instance, src/grpc/queue-service.ts), and a message that moved meanwhile (to
 * its dead-letter topic) is not settled under a grant of another topic. Without, by id alone.
 */
export interface AckTarget {
  id: string;
  topic?: string;
  /**
   * With `topic`: the ordering key the message was dequeued with, as the instance that handed it out knows it
   * (undefined where it does not). On MariaDB the line's hand-over then goes in the ack's own transaction.
   */
  orderingKey?: string | null;
}

/**
 * Acks a group-committed batch: locks the processing rows, lets `beforeDelete` copy replayable ones to the
 * archive log in the same transaction, deletes them. Ids that are not processing (on their target's topic,
 * when it names one), or that are fan-out messages (WITHOUT_DELIVERIES), are simply not returned.
 * Without `beforeDelete`, where the engine has it, one `DELETE ... RETURNING` does all that in one statement
 * (four round trips fewer per batch: BEGIN, the locking SELECT, COMMIT).
 *
 * Retried whole. After a lost commit answer the ack may have been applied: the re-run (always the
 * transactional way then) also answers as acked every id whose message is gone from the table. Gone means
 * settled for good (acked by the lost attempt, or by another consumer after a redelivery), which is what the
 * caller asked for. The price: an id that never existed is answered acked in that rare case, not 404. The
 * topic of a gone message is known only when an earlier attempt read it (else "").
 */
export async function ackMessages(db: Knex, targets: AckTarget[], now: number, options: AckOptions): Promise<AckedMessage[]> {
  const { beforeDelete, handOverFailed } = options;
  const oneStatement = !beforeDelete && (await capabilitiesOf(db)).deleteReturning;
  const which = targetCondition(targets);
  const seen = new Map<string, string>();
  return withDbRetry(db, async (attempt) => {
    if (oneStatement && !attempt.uncertain) return deleteProcessing(db, which, knownLines(targets), now, handOverFailed);
    return db.transaction(async (trx) => {
      const acked: AckedMessage[] = (
        await lockForSettle(
          trx,
          trx('messages').select('id', 'topic', 'ordering_key').whereRaw(which.sql, which.bindings).andWhere({ status: 'processing' }).whereRaw(WITHOUT_DELIVERIES),
        )
      ).map((r: { id: string; topic: string; ordering_key: string | null }) => ({ id: String(r.id), topic: String(r.topic), orderingKey: r.ordering_key ?? null }));
      const gone = attempt.uncertain ? await goneIds(trx, [...new Set(targets.map((t) => t.id))]) : [];
      for (const a of acked) seen.set(a.id, a.topic);
      if (acked.length > 0) {
        if (beforeDelete) await beforeDelete(trx, acked);
        await trx('messages')
          .whereIn(
            'id',
            acked.map((a) => a.id),
          )
          .delete();
        await leaveLinesOf(trx, leftLines(acked, new Set()), now);
      }
      return [...acked, ...gone.map((id) => ({ id, topic: seen.get(id) ?? '' }))];
    });
  });
}

interface Condition {
  sql: string;
  bindings: string[];
}

/**
 * `id IN (...)` for the targets without a topic, `(topic = ? AND id IN (...))` per topic named: a range of
 * the primary key (MariaDB reads messages_queue instead only where the topic has fewer processing rows than
 * the batch names, which are then the rows it deletes). Written out rather than through the query builder:
 * it runs for every ack batch, and the builder cost ~30 µs of CPU per statement against ~24 for the text.
 */
function targetCondition(targets: AckTarget[]): Condition {
  const byTopic = new Map<string | undefined, Set<string>>();
  for (const { id, topic } of targets) {
    const ids = byTopic.get(topic);
    if (ids) ids.add(id);
    else byTopic.set(topic, new Set([id]));
  }
  const parts: string[] = [];
  const bindings: string[] = [];
  for (const [topic, ids] of byTopic) {
    const list = `id IN (${Array.from(ids, () => '?').join(', ')})`;
    if (topic === undefined) parts.push(list);
    else {
      parts.push(`(topic = ? AND ${list})`);
      bindings.push(topic);
    }
    bindings.push(...ids);
  }
  return { sql: parts.length === 1 ? parts[0] : `(${parts.join(' OR ')})`, bindings };
}

/** The ids among `ids` that have no message row (at all, in any status). */
export async function goneIds(trx: Knex.Transaction, ids: string[]): Promise<string[]> {
  const present = new Set<string>();
  for (let i = 0; i < ids.length; i += 500) {
    for (const id of await trx('messages').whereIn('id', ids.slice(i, i + 500)).pluck('id')) present.add(String(id));
  }
  return ids.filter((id) => !present.has(id));
}

/**
 * The lines of the targets whose ordering key the caller knows: the hand-overs an ack may have to make. A
 * line named by two targets (an ack of a head that left already, beside one of its successor) is left out:
 * which of them is the head is known only after the DELETE.
 */
function knownLines(targets: AckTarget[]): Array<{ line: Line; id: string }> {
  const byLine = new Map<string, { line: Line; id: string } | null>();
  for (const t of targets) {
    if (t.topic === undefined || t.orderingKey == null) continue;
    const at = `${t.topic}\u0000${t.orderingKey}`;
    byLine.set(at, byLine.has(at) ? null : { line: { topic: t.topic, group: '', key: t.orderingKey }, id: t.id });
  }
  return [...byLine.values()].filter((l) => l !== null);
}

/**
 * Hears of a hand-over that failed after its ack's commit (its retries spent): the messages are acked, and
 * the ack answers so; the keys' lines (of `topics`) name a head that is gone, so nothing of those keys is
 * claimable until the expiry reaper's sweep hands them over (src/store/ordering/lines.ts, repairLines).
 */
export type HandOverFailure = (topics: string[], err: unknown) => void;

export interface AckOptions {
  /** Runs in the ack's transaction before its DELETE (the archive of replayable topics). */
  beforeDelete?: (trx: Knex.Transaction, acked: AckedMessage[]) => Promise<void>;
  handOverFailed: HandOverFailure;
}

/**
 * The one-statement ack. Where its caller named lines (`known`, the ordering keys of messages this instance
 * handed out), they are handed over in the DELETE's own transaction: one commit for both. On MariaDB the
 * statements go with the DELETE in one round trip and hand a line over only where the DELETE took its head
 * (they look for head rows that name a message no longer there), so a named message that was not processing
 * keeps its turn; SQLite runs them after the DELETE, from its answer. Messages with an ordering key that no
 * one named (acked through another instance than the one that dequeued them) are handed over after it, in a
 * transaction of their own: an instance that dies between the two leaves the key's line on a head that is
 * gone, which the expiry reaper's sweep hands over (src/store/ordering/lines.ts, repairLines). Order holds
 * either way: nothing of the key is claimable meanwhile.
 */
async function deleteProcessing(db: Knex, which: Condition, known: Array<{ line: Line; id: string }>, now: number, handOverFailed: HandOverFailure): Promise<AckedMessage[]> {
  const remove = { sql: `DELETE FROM messages WHERE ${which.sql} AND status = 'processing' AND ${WITHOUT_DELIVERIES} RETURNING id, topic, ordering_key`, bindings: which.bindings };
  const driver = capabilities(db).driverQuery;
  // SQLite: the statements cost no round trip, but each transaction is a commit (an fsync); the hand-over of
  // the lines it knows of goes in the DELETE's, and it sees exactly what the DELETE took.
  if (known.length > 0 && !driver) {
    return retryTransaction(db, async (trx) => {
      const acked = ackedOf(await runStatement(trx, remove.sql, remove.bindings));
      await leaveLinesOf(trx, leftLines(acked, new Set()), now);
      return acked;
    });
  }
  const together = known.length > 0 && driver;
  const acked = together ? await deleteHandingOver(db, remove, known, now, handOverFailed) : ackedOf(await runStatement(db, remove.sql, remove.bindings));
  const lefts = leftLines(acked, new Set(together ? known.map((k) => k.id) : []));
  if (lefts.length === 0) return acked;
  // MySQL/MariaDB: the hand-over's statements in one round trip; SQLite's statements cost no round trip.
  await afterCommit(lefts, handOverFailed, () =>
    capabilities(db).driverQuery ? withDbRetry(db, () => runInOneTrip(db, leaveTopicLinesStatements(lefts, now))) : retryTransaction(db, (trx) => leaveLinesOf(trx, lefts, now)),
  );
  return acked;
}

/**
 * A hand-over in a transaction after the ack's own committed. Its failure does not make the ack fail: the
 * messages are gone, so an ack answered with an error would be retried by its client and answered "not
 * found" for messages it did settle.
 */
async function afterCommit(lefts: Array<{ line: Line }>, handOverFailed: HandOverFailure, handOver: () => Promise<unknown>): Promise<void> {
  try {
    await handOver();
  } catch (err) {
    handOverFailed([...new Set(lefts.map((l) => l.line.topic))], err);
  }
}

/**
 * MariaDB: the DELETE and the hand-over UPDATE of the lines the caller named, in one transaction sent in one
 * round trip. Where the UPDATE changed fewer rows than two per line whose head the DELETE took (a line with no
 * next message in what it read), those lines are handed over again in a transaction of its own
 * (catchUpTopicLinesStatements), which closes the ones with nothing waiting.
 */
async function deleteHandingOver(db: Knex, remove: Statement, known: Array<{ line: Line; id: string }>, now: number, handOverFailed: HandOverFailure): Promise<AckedMessage[]> {
  const [removed, handed] = await runInOneTrip(db, [remove, topicLinesHandOver(known, now, { ifGone: true }).handOver]);
  const acked = ackedOf(removed);
  const taken = new Set(acked.map((a) => a.id));
  const left = known.filter((k) => taken.has(k.id));
  if (left.length > 0 && (handed as { affectedRows: number }).affectedRows < 2 * left.length) {
    await afterCommit(left, handOverFailed, () => withDbRetry(db, () => runInOneTrip(db, catchUpTopicLinesStatements(left, now))));
  }
  return acked;
}

function ackedOf(rows: unknown): AckedMessage[] {
  return (rows as Array<{ id: string; topic: string; ordering_key: string | null }>).map((r) => ({ id: String(r.id), topic: String(r.topic), orderingKey: r.ordering_key ?? null }));
}

/** Acked messages with an ordering key end their turn (the next one of each key becomes its head), but for those already `handed` over. */
function leftLines(acked: AckedMessage[], handed: Set<string>): Array<{ line: Line; id: string }> {
  return acked.flatMap((a) => (a.orderingKey == null || handed.has(a.id) ? [] : [{ line: { topic: a.topic, group: '', key: a.orderingKey }, id: a.id }]));
}

export interface RequeueTarget {
  maxRetries: (topic: string) => number;
  expiresAt: (topic: string) => number | null;
  now: number;
}

/** The columns a requeue resets: back on the original topic, fresh retries and TTL. */
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

/**
 * A group's dead letter names its group (the column, and the metadata key `consumer_group`); requeued to its
 * topic it belongs to no group any more, whichever way it goes back.
 */
export function withoutDeadLetterGroup(row: { metadata: unknown; consumer_group: unknown }): { consumer_group: string; metadata: string } {
  const metadata = String(row.metadata);
  if (!row.consumer_group) return { consumer_group: '', metadata };
  try {
    const value = JSON.parse(metadata) as Record<string, string>;
    delete value.consumer_group;
    return { consumer_group: '', metadata: JSON.stringify(value) };
  } catch {
    return { consumer_group: '', metadata };
  }
}

/**
 * Requeue of a dead letter to its original topic. Null when the id is not a dead letter.
 * After a lost commit answer, a re-run that no longer finds the dead letter answers what the lost attempt did
 * (it was requeued, or superseded and removed) rather than "not a dead letter".
 */
export async function requeueDeadLetter(db: Knex, id: string, target: RequeueTarget): Promise<{ topic: string; outcome: Returned } | null> {
  let earlier: { topic: string; outcome: Returned } | undefined;
  return retryTransaction(db, async (trx, attempt) => {
    const row = await lockForSettle(
      trx,
      trx('messages').select('id', 'topic', 'original_topic', 'metadata', 'consumer_group', 'ordering_key').where({ id }).andWhere('original_topic', '<>', '').andWhere('topic', 'like', '%.dlq'),
    ).first();
    if (!row) return attempt.uncertain && earlier ? earlier : null;
    const topic = String(row.original_topic);
    // The topic's groups may all be gone since a group dead-lettered it: it comes back a plain message.
    const outcome = await returnToPending(trx, id, { ...requeueChanges(topic, target), ...withoutDeadLetterGroup(row) }, target.now);
    if (row.ordering_key != null && outcome !== 'superseded') await requeueIntoLines(trx, id, topic, String(row.ordering_key), [], target.now);
    earlier = { topic, outcome };
    return earlier;
  });
}
