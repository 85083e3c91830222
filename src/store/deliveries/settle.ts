import type { Knex } from 'knex';
import { v7 as uuidv7 } from 'uuid';
import { capabilities } from '../capabilities.js';
import { retryTransaction, withDbRetry } from '../retry.js';
import { normaliseRow, type MessageRow } from '../messages/rows.js';
import { appliedEarlier, dlqTopicOf, goneIds, type AttemptResult, type AttemptRules, type Decided } from '../messages/settle.js';
import { deliveryStatuses, lockMessages, settleMessages, settleWith, type SettleOutcome } from './complete.js';
import { handOverOf, leaveLine } from '../ordering/lines.js';
import { runStatements } from '../statement.js';
import { storedTraceContext } from '../messages/trace-context.js';

export interface GroupSettleContext {
  replayable: (topic: string) => boolean;
  now: number;
}

/** The message row with the group's own attempt counters in place of the message's. */
async function deliveryRow(trx: Knex.Transaction, id: string, group: string, status: string): Promise<MessageRow | null> {
  return (await deliveryRows(trx, [id], group, status)).get(id) ?? null;
}

/** deliveryRow for each of `ids` (at most 500: one statement), by message id; an id without one is absent. */
async function deliveryRows(trx: Knex.Transaction, ids: string[], group: string, status: string): Promise<Map<string, MessageRow>> {
  const query = trx('deliveries as d')
    .join('messages as m', 'm.id', 'd.message_id')
    .select('m.id', 'm.topic', 'm.msg_key', 'm.metadata', 'm.status', 'm.max_retries', 'd.visible_at', 'm.expires_at', 'm.created_at', 'm.original_topic', 'm.dlq_moved_at', 'd.retry_count', 'd.last_error', 'm.ordering_key')
    .where({ 'd.consumer_group': group, 'd.status': status })
    .whereIn('d.message_id', ids);
  const rows = ((await (capabilities(trx).rowLocks ? query.forUpdate() : query)) as Record<string, unknown>[]).map(normaliseRow);
  return new Map(rows.map((row) => [row.id, row]));
}

function withGroup(metadata: string, group: string): string {
  let parsed: Record<string, string> = {};
  try {
    const value = JSON.parse(metadata) as unknown;
    if (value && typeof value === 'object' && !Array.isArray(value)) parsed = value as Record<string, string>;
  } catch {
    /* unreadable metadata is replaced rather than copied */
  }
  return JSON.stringify({ ...parsed, consumer_group: group });
}

/**
 * A group's dead letter: a copy of the message (new id, payload copied by INSERT ... SELECT) in <topic>.dlq,
 * carrying the group in metadata and in the consumer_group column; the group's delivery goes.
 */
async function deadLetter(trx: Knex.Transaction, row: MessageRow, group: string, attempts: number, error: string, now: number): Promise<void> {
  const select = trx('messages')
    .select(
      trx.raw('?', [uuidv7()]),
      trx.raw('?', [dlqTopicOf(row.topic)]),
      'msg_key',
      'payload',
      trx.raw('?', [withGroup(row.metadata, group)]),
      trx.raw("'pending'"),
      trx.raw('?', [attempts]),
      'max_retries',
      trx.raw('?', [error]),
      trx.raw('0'),
      trx.raw('NULL'),
      'created_at',
      'topic',
      trx.raw('?', [now]),
      trx.raw('?', [group]),
      'ordering_key',
    )
    .where({ id: row.id })
    .toSQL();
  await trx.raw(
    'INSERT INTO messages (id, topic, msg_key, payload, metadata, status, retry_count, max_retries, last_error, visible_at, expires_at, created_at, original_topic, dlq_moved_at, consumer_group, ordering_key) ' +
      select.sql,
    select.bindings as Knex.RawBinding[],
  );
  await trx('deliveries').where({ message_id: row.id, consumer_group: group }).delete();
}

async function applyGroupAttempt(trx: Knex.Transaction, row: MessageRow, group: string, rules: AttemptRules, error: string, ctx: GroupSettleContext): Promise<AttemptResult> {
  const attempts = row.retry_count + 1;
  const outcome = rules.decide(row);
  // An immediate retry is due at once (0) and so goes back to its place among the group's ready deliveries,
  // oldest first, as a topic's does: the claim orders by (visible_at, message_id).
  const retryAt = outcome === 'retry' ? rules.retryAt(row) : 0;
  const delivery = trx('deliveries').where({ message_id: row.id, consumer_group: group });
  if (outcome === 'retry') await delivery.update({ status: 'pending', retry_count: attempts, last_error: error, visible_at: retryAt });
  else if (outcome === 'failed') await delivery.update({ status: 'failed', retry_count: attempts, last_error: error });
  else await deadLetter(trx, row, group, attempts, error, ctx.now);
  if (outcome !== 'retry') {
    // The group's turn of this message's ordering key ends: its next message becomes the group's head.
    if (row.ordering_key !== null) await leaveLine(trx, { topic: row.topic, group, key: row.ordering_key }, row.id, ctx.now);
    await settleMessages(trx, [{ id: row.id, topic: row.topic }], ctx.replayable, ctx.now);
  }
  const trace = storedTraceContext(row.metadata);
  return trace ? { id: row.id, topic: row.topic, outcome, group, trace } : { id: row.id, topic: row.topic, outcome, group };
}

/**
 * A group's nack: locks the message row, then the group's processing delivery, and applies the decision.
 * Retried whole; after a lost commit answer a re-run that finds the delivery settled (or attempted once more
 * than the lost attempt saw) answers the lost attempt's result instead of applying a second attempt.
 */
export async function nackDelivery(db: Knex, id: string, group: string, error: string, rules: AttemptRules, ctx: GroupSettleContext): Promise<AttemptResult | null> {
  let decided: Decided<AttemptResult> | undefined;
  return retryTransaction(db, async (trx, attempt) => {
    const row = (await lockMessages(trx, [id])).length === 0 ? null : await deliveryRow(trx, id, group, 'processing');
    if (appliedEarlier(attempt.uncertain, decided, row)) return decided.result;
    if (!row) return null;
    const result = await applyGroupAttempt(trx, row, group, rules, error, ctx);
    decided = { retryCount: row.retry_count, result };
    return result;
  });
}

/**
 * Visibility expiry of one group's deliveries on a topic: each counts as a failed attempt.
 * A re-run after a lost commit answer that finds nothing left reports what the lost attempt released.
 */
export async function releaseExpiredDeliveries(
  db: Knex,
  topic: string,
  group: string,
  rules: AttemptRules,
  error: string,
  ctx: GroupSettleContext,
  limit = 500,
): Promise<AttemptResult[]> {
  const expired = () => db('deliveries').where({ topic, consumer_group: group, status: 'processing' }).andWhere('visible_at', '<=', ctx.now);
  const ids: string[] = await withDbRetry(db, () => expired().orderBy('visible_at').limit(limit).pluck('message_id'));
  if (ids.length === 0) return [];
  let earlier: AttemptResult[] = [];
  return retryTransaction(db, async (trx, attempt) => {
    // A group unregistered meanwhile (its registration row goes first, its deliveries after, in batches) is
    // not retried or dead-lettered under a name that no longer exists: its deliveries are being dropped.
    if (!(await trx('consumer_groups').where({ topic, consumer_group: group }).first('topic'))) return attempt.uncertain ? earlier : [];
    const locked = await lockMessages(trx, ids);
    // Deliveries whose message is gone (removed by a path that did not know the topic was fan-out) are dropped.
    const gone = ids.filter((id) => !locked.some((m) => m.id === id));
    if (gone.length > 0) await trx('deliveries').whereIn('message_id', gone).delete();
    const results: AttemptResult[] = [];
    // Re-read under the lock, in one statement: an ack or nack may have settled a delivery since the probe above.
    const rows = locked.length === 0 ? new Map<string, MessageRow>() : await deliveryRows(trx, locked.map((m) => m.id), group, 'processing');
    for (const { id } of locked) {
      const row = rows.get(id);
      if (row && row.visible_at <= ctx.now) results.push(await applyGroupAttempt(trx, row, group, rules, error, ctx));
    }
    if (results.length === 0 && attempt.uncertain) return earlier;
    earlier = results;
    return results;
  });
}

/**
 * A group's acks: marks its processing deliveries acked and finishes the messages every group is done with
 * (archiving them first when replayable), all in one transaction. Returns the ids that were acked.
 * Retried whole. After a lost commit answer, ids whose delivery for this group is already `acked`, or whose
 * message is gone (every group finished it), are answered acked too: that is the state the lost attempt
 * left, and a second ack must not report 404 for it (see ackMessages for the price of "gone").
 */
export async function ackDeliveries(db: Knex, ids: string[], group: string, ctx: GroupSettleContext): Promise<{ acked: Array<{ id: string; topic: string }>; settled: SettleOutcome }> {
  const seen = new Map<string, string>();
  return retryTransaction(db, async (trx, attempt) => {
    const locked = await lockMessages(trx, ids);
    for (const m of locked) seen.set(m.id, m.topic);
    const earlier = attempt.uncertain ? await settledEarlier(trx, ids, locked, group, seen) : [];
    const none = { acked: earlier, settled: { completed: [], expired: [] } };
    if (locked.length === 0) return none;
    const deliveries = await deliveryStatuses(
      trx,
      locked.map((m) => m.id),
    );
    const processing = new Set(deliveries.filter((d) => d.consumer_group === group && d.status === 'processing').map((d) => d.message_id));
    const acked = locked.filter((m) => processing.has(m.id));
    if (acked.length === 0) return none;
    const ackedIds = acked.map((m) => m.id);
    const markAcked = { sql: `UPDATE deliveries SET status = 'acked' WHERE consumer_group = ? AND message_id IN (${ackedIds.map(() => '?').join(', ')})`, bindings: [group, ...ackedIds] };
    // The mark, the hand-over's locks and seeks in one round trip; its writes with the settle's in another.
    const handOver = handOverOf(trx, acked.flatMap((m) => (m.orderingKey === null ? [] : [{ line: { topic: m.topic, group, key: m.orderingKey }, id: m.id }])), ctx.now);
    const [, ...read] = await runStatements(trx, [markAcked, ...handOver.reads]);
    for (const d of deliveries) if (d.consumer_group === group && processing.has(d.message_id)) d.status = 'acked';
    const settled = await settleWith(trx, acked, deliveries, ctx.replayable, ctx.now, handOver.reads.length > 0 ? handOver.writes(read) : []);
    return { acked: [...acked, ...earlier], settled };
  });
}

/** For a re-run after a lost commit answer: the ids this group's lost attempt may have acked. */
async function settledEarlier(
  trx: Knex.Transaction,
  ids: string[],
  locked: Array<{ id: string; topic: string }>,
  group: string,
  seen: Map<string, string>,
): Promise<Array<{ id: string; topic: string }>> {
  const acked = new Set(
    locked.length === 0
      ? []
      : await trx('deliveries')
          .whereIn(
            'message_id',
            locked.map((m) => m.id),
          )
          .where({ consumer_group: group, status: 'acked' })
          .pluck('message_id'),
  );
  const done = locked.filter((m) => acked.has(m.id));
  const gone = (await goneIds(trx, ids)).map((id) => ({ id, topic: seen.get(id) ?? '' }));
  return [...done, ...gone];
}
