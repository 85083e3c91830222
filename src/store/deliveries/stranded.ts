import type { Knex } from 'knex';
import { engineOf } from '../dialect.js';
import { retryTransaction } from '../retry.js';
import { dropDeliveries } from './complete.js';
import { DELIVERY_COLUMNS, insertIgnore } from './adopt.js';

/**
 * How long after a group's registration its topic is searched for messages stored without it. An enqueue
 * transaction that read the topic's groups before the registration committed, and committed after both of
 * the registration's adoptions, stored its message with no delivery at all; such a transaction is one open
 * across the registration, so an hour is many times longer than one lasts (a statement waiting for a row lock
 * gives up after `innodb_lock_wait_timeout`, 50 s by default).
 */
export const STRANDED_WINDOW_MS = 3_600_000;

/** What a repair did: deliveries stored per topic, and messages finished by dropping an unregistered group's. */
export interface StrandedRepair {
  adopted: Map<string, number>;
  dropped: number;
}

/**
 * MySQL/MariaDB (on SQLite every write transaction holds the database's write lock from its start, so an
 * enqueue and a registration or unregistration never overlap): repairs what an enqueue racing a consumer
 * group's registration or unregistration left behind, as part of the expiry reaper's run.
 * - Messages of a topic with a group registered in the last STRANDED_WINDOW_MS that are pending and have no
 *   delivery at all: every registered group of the topic gets one, as the enqueue would have given it. A
 *   pending message with no delivery on a fan-out topic has no other origin: enqueues and adoptions store a
 *   message's deliveries in the transaction that stores or adopts it, and a requeue to one group keeps that
 *   group's.
 * - Deliveries of a group that is no longer registered (an enqueue that read the group before its
 *   unregistration committed, and committed after the unregistration dropped the group's deliveries): dropped,
 *   and their messages finished when no group still works on them, as the unregistration does.
 */
export async function repairStranded(db: Knex, now: number, replayable: (topic: string) => boolean, signal?: AbortSignal): Promise<StrandedRepair> {
  const adopted = new Map<string, number>();
  if (engineOf(db) !== 'mysql') return { adopted, dropped: 0 };
  const recent = await db('consumer_groups').distinct('topic').where('created_at', '>=', now - STRANDED_WINDOW_MS).pluck('topic');
  for (const topic of recent.map(String)) {
    signal?.throwIfAborted();
    const count = await adoptUndelivered(db, topic);
    if (count > 0) adopted.set(topic, count);
  }
  let dropped = 0;
  for (const { topic, group } of await unregisteredDeliveries(db)) {
    signal?.throwIfAborted();
    // Checked again in each statement: a group registered again under the same name meanwhile keeps them.
    const ofUnregistered = (query: Knex.QueryBuilder) =>
      query.where({ consumer_group: group }).whereNotExists((sub) => sub.select(db.raw('1')).from('consumer_groups').where({ topic, consumer_group: group }));
    dropped += await dropDeliveries(db, topic, ofUnregistered, replayable(topic), now);
  }
  return { adopted, dropped };
}

/**
 * One transaction: the topic's group rows are read under a share lock, so an unregistration waits for it
 * rather than leave a delivery of its group behind; then one INSERT ... SELECT gives each of those groups a
 * delivery of every pending message with none. Returns the deliveries stored.
 */
async function adoptUndelivered(db: Knex, topic: string): Promise<number> {
  return retryTransaction(db, async (trx) => {
    const groups = await trx('consumer_groups').where({ topic }).forShare().pluck('consumer_group');
    if (groups.length === 0) return 0;
    const [result] = (await trx.raw(
      `${insertIgnore(trx)} deliveries ${DELIVERY_COLUMNS}
       SELECT m.id, m.topic, g.consumer_group, 'pending', 0, '', 0, m.expires_at
       FROM messages m JOIN consumer_groups g ON g.topic = m.topic
       WHERE m.topic = ? AND m.status = 'pending' AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.message_id = m.id)`,
      [topic],
    )) as [{ affectedRows: number }];
    return result.affectedRows;
  });
}

/** The (topic, group) pairs that have deliveries but no registration: one loose scan of index deliveries_claim. */
async function unregisteredDeliveries(db: Knex): Promise<Array<{ topic: string; group: string }>> {
  const pairs = await db('deliveries').select('topic', 'consumer_group').groupBy('topic', 'consumer_group');
  if (pairs.length === 0) return [];
  const registered = new Set((await db('consumer_groups').select('topic', 'consumer_group')).map((r: { topic: string; consumer_group: string }) => `${r.topic}\n${r.consumer_group}`));
  return pairs
    .map((r: { topic: string; consumer_group: string }) => ({ topic: String(r.topic), group: String(r.consumer_group) }))
    .filter((p) => !registered.has(`${p.topic}\n${p.group}`));
}
