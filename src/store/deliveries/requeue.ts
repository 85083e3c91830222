import type { Knex } from 'knex';
import { capabilities } from '../capabilities.js';
import { retryTransaction } from '../retry.js';
import { requeueChanges, returnToPending, withoutDeadLetterGroup, type RequeueTarget, type Returned } from '../messages/settle.js';
import { insertDeliveries } from './adopt.js';
import { requeueIntoLines } from '../ordering/lines.js';

export interface DeadLetterInfo {
  originalTopic: string;
  consumerGroup: string;
}

/** What requeue needs to know before it picks a path; null when the id is not a dead letter. */
export async function findDeadLetter(db: Knex, id: string): Promise<DeadLetterInfo | null> {
  const row = await db('messages').where({ id }).andWhere('original_topic', '<>', '').andWhere('topic', 'like', '%.dlq').first('original_topic', 'consumer_group');
  return row ? { originalTopic: String(row.original_topic), consumerGroup: String(row.consumer_group ?? '') } : null;
}

/**
 * Requeue of a dead letter to a fan-out topic. `forAll`: every registered group gets it again, so the row is
 * fresh (`pending`, key rules apply); otherwise only the group that dead-lettered it: the row is `processing`
 * (already seen), so a keyed enqueue never overwrites what only that group will receive.
 * Retried whole; after a lost commit answer a re-run that no longer finds the dead letter answers what the
 * lost attempt did (deliveries are inserted ignoring duplicates either way).
 */
export async function requeueToGroups(
  db: Knex,
  id: string,
  groups: string[],
  forAll: boolean,
  target: RequeueTarget,
): Promise<{ topic: string; outcome: Returned } | null> {
  let earlier: { topic: string; outcome: Returned } | undefined;
  return retryTransaction(db, async (trx, attempt) => {
    const query = trx('messages').select('id', 'original_topic', 'metadata', 'consumer_group', 'ordering_key').where({ id }).andWhere('original_topic', '<>', '').andWhere('topic', 'like', '%.dlq');
    const row = await (capabilities(trx).rowLocks ? query.forUpdate() : query).first();
    if (!row) return attempt.uncertain && earlier ? earlier : null;
    const topic = String(row.original_topic);
    const changes = { ...requeueChanges(topic, target), ...withoutDeadLetterGroup(row) };
    let outcome: Returned = 'pending';
    if (forAll) {
      outcome = await returnToPending(trx, id, changes, target.now);
      if (outcome === 'superseded') return (earlier = { topic, outcome });
    } else {
      await trx('messages').where({ id }).update({ ...changes, status: 'processing' });
    }
    const orderingKey = row.ordering_key == null ? null : String(row.ordering_key);
    await insertDeliveries(trx, [{ id, topic, expiresAt: changes.expires_at, orderingKey }], () => groups);
    if (orderingKey !== null) await requeueIntoLines(trx, id, topic, orderingKey, groups, target.now);
    return (earlier = { topic, outcome });
  });
}
