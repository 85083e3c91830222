import type { Knex } from 'knex';
import { capabilities } from '../capabilities.js';
import { archiveMessages } from '../message-log.js';
import { retryTransaction } from '../retry.js';
import { runStatements, type Statement } from '../statement.js';

export const ACTIVE_DELIVERY = ['pending', 'processing'];

export interface SettleOutcome {
  /** Messages that left the topic (every group acked, dead-lettered or failed them). */
  completed: string[];
  /** Messages marked expired because a group's TTL ran out and no group works on them any more. */
  expired: string[];
}

/** Locks message rows in primary-key order; every path that can finish a fan-out message takes this lock first. */
export async function lockMessages(trx: Knex.Transaction, ids: string[]): Promise<Array<{ id: string; topic: string; orderingKey: string | null }>> {
  if (ids.length === 0) return [];
  const query = trx('messages').select('id', 'topic', 'ordering_key').whereIn('id', ids).orderBy('id');
  const rows = await (capabilities(trx).rowLocks ? query.forUpdate() : query);
  return rows.map((r: { id: string; topic: string; ordering_key: string | null }) => ({ id: String(r.id), topic: String(r.topic), orderingKey: r.ordering_key ?? null }));
}

/** A delivery's group and status, as settleWith reads them. */
export interface DeliveryStatus {
  message_id: string;
  consumer_group: string;
  status: string;
}

/** Every group's delivery of the messages `ids`, by primary key. */
export async function deliveryStatuses(trx: Knex.Transaction, ids: string[]): Promise<DeliveryStatus[]> {
  if (ids.length === 0) return [];
  const rows: Array<Record<string, unknown>> = await trx('deliveries').select('message_id', 'consumer_group', 'status').whereIn('message_id', ids);
  return rows.map((r) => ({ message_id: String(r.message_id), consumer_group: String(r.consumer_group), status: String(r.status) }));
}

/**
 * Finishes the fan-out messages among `messages` (rows locked by the caller) that no group is still working
 * on: archived when some group acked them and their topic is replayable, then removed with their deliveries;
 * when a group's TTL ran out instead they stay as `expired` for the delete reaper.
 */
export async function settleMessages(
  trx: Knex.Transaction,
  messages: Array<{ id: string; topic: string }>,
  replayable: (topic: string) => boolean,
  now: number,
): Promise<SettleOutcome> {
  if (messages.length === 0) return { completed: [], expired: [] };
  return settleWith(trx, messages, await deliveryStatuses(trx, messages.map((m) => m.id)), replayable, now, []);
}

/**
 * settleMessages from the deliveries of `messages` as the caller read them in its transaction, after locking
 * the messages, with its own changes applied. Its writes go in one round trip, after the caller's `also`.
 */
export async function settleWith(
  trx: Knex.Transaction,
  messages: Array<{ id: string; topic: string }>,
  deliveries: DeliveryStatus[],
  replayable: (topic: string) => boolean,
  now: number,
  also: Statement[],
): Promise<SettleOutcome> {
  const outcome: SettleOutcome = { completed: [], expired: [] };
  const writes = [...also];
  const withStatus = (statuses: string[]) => new Set(deliveries.filter((d) => statuses.includes(d.status)).map((d) => d.message_id));
  const active = withStatus(ACTIVE_DELIVERY);
  const done = messages.filter((m) => !active.has(m.id));
  if (done.length > 0) {
    const doneIds = done.map((m) => m.id);
    const acked = withStatus(['acked']);
    const expired = withStatus(['expired']);
    const toArchive = await notSettledBefore(trx, done.filter((m) => acked.has(m.id) && replayable(m.topic)).map((m) => m.id));
    if (toArchive.length > 0) await archiveMessages(trx, toArchive, now);
    outcome.expired = doneIds.filter((id) => expired.has(id));
    outcome.completed = doneIds.filter((id) => !expired.has(id));
    const list = (ids: string[]) => ids.map(() => '?').join(', ');
    if (outcome.expired.length > 0) writes.push({ sql: `UPDATE messages SET status = 'expired' WHERE id IN (${list(outcome.expired)})`, bindings: outcome.expired });
    if (outcome.completed.length > 0) {
      writes.push({ sql: `DELETE FROM deliveries WHERE message_id IN (${list(outcome.completed)})`, bindings: outcome.completed });
      writes.push({ sql: `DELETE FROM messages WHERE id IN (${list(outcome.completed)})`, bindings: outcome.completed });
    }
  }
  await runStatements(trx, writes);
  return outcome;
}

/**
 * A message marked expired here kept its deliveries, the acked ones too, and was archived then if it was to be:
 * settling it again (a purge, an unregistration, the expiry run's repair) must not archive it a second time,
 * which the log's primary key refuses, failing that whole transaction.
 */
async function notSettledBefore(trx: Knex.Transaction, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return ids;
  const expired = new Set((await trx('messages').whereIn('id', ids).where({ status: 'expired' }).pluck('id')).map(String));
  return ids.filter((id) => !expired.has(id));
}

/**
 * The deliveries of `group` on `topic` while the group is not registered, checked again by every statement
 * that uses it: a group registered again under the same name meanwhile keeps the deliveries its registration
 * adopted (a clean-up of its former registration still running would otherwise take them).
 * Acked deliveries stay: they are the record that the message was consumed, which settleMessages archives it
 * by once the remaining groups finish it (dead-lettered, expired or dropped with their own group); they go with
 * their message. A group registered again under the name does not adopt such a message: no group adopts one
 * that some group has started.
 */
export function ofUnregisteredGroup(db: Knex, topic: string, group: string): (query: Knex.QueryBuilder) => Knex.QueryBuilder {
  return (query) =>
    query
      .where({ consumer_group: group })
      .whereNot({ status: 'acked' })
      .whereNotExists((sub) => sub.select(db.raw('1')).from('consumer_groups').where({ topic, consumer_group: group }));
}

/**
 * Drops the deliveries of `topic` that `chosen` selects (an unregistered group's, or a purge's statuses), up
 * to 1,000 per transaction, and in the same transaction finishes the messages among theirs that no group is
 * still working on (settleMessages). Only messages that lost a delivery here are looked at: a message stored
 * meanwhile without deliveries (the topic's last group is gone, so it is a plain topic again) is nobody's to
 * finish. Returns how many messages were finished: removed, or marked expired (a group's TTL ran out).
 */
export async function dropDeliveries(
  db: Knex,
  topic: string,
  chosen: (query: Knex.QueryBuilder) => Knex.QueryBuilder,
  replayable: boolean,
  now: number,
): Promise<{ removed: number; expired: number }> {
  const finished = { removed: 0, expired: 0 };
  for (;;) {
    const batch: Array<{ message_id: string; consumer_group: string }> = await chosen(db('deliveries').select('message_id', 'consumer_group').where({ topic })).limit(1000);
    if (batch.length === 0) return finished;
    const byGroup = new Map<string, string[]>();
    for (const { message_id, consumer_group } of batch) {
      const ids = byGroup.get(consumer_group);
      if (ids) ids.push(String(message_id));
      else byGroup.set(consumer_group, [String(message_id)]);
    }
    // Retried whole; a re-run after a lost commit answer that finds these messages already finished counts
    // what the lost attempt finished.
    let earlier: SettleOutcome | undefined;
    const outcome = await retryTransaction(db, async (trx, attempt) => {
      const messages = await lockMessages(trx, [...new Set(batch.map((d) => String(d.message_id)))]);
      for (const [group, ids] of byGroup) await chosen(trx('deliveries').where({ consumer_group: group }).whereIn('message_id', ids)).delete();
      const settled = await settleMessages(trx, messages, () => replayable, now);
      if (attempt.uncertain && earlier && settled.completed.length + settled.expired.length === 0) return earlier;
      earlier = settled;
      return settled;
    });
    finished.removed += outcome.completed.length;
    finished.expired += outcome.expired.length;
  }
}
