import type { Knex } from 'knex';
import { retryTransaction } from '../retry.js';
import { repairLines } from '../ordering/lines.js';

/**
 * Deletes in batches of `batchSize` ids, each its own short transaction, so a purge of millions of rows never
 * holds a long lock or builds one enormous undo log.
 */
export async function deleteInBatches(db: Knex, select: () => Knex.QueryBuilder, batchSize = 1000): Promise<number> {
  let deleted = 0;
  for (;;) {
    const ids = (await select().select('id').limit(batchSize)).map((r: { id: string }) => r.id);
    if (ids.length === 0) return deleted;
    // Fan-out messages take their per-group deliveries with them (an index seek when there are none).
    // Retried whole; a re-run after a lost commit answer that deletes nothing of this batch counts what the
    // lost attempt deleted (its statements answered before the COMMIT did not).
    let earlier = 0;
    deleted += await retryTransaction(db, async (trx, attempt): Promise<number> => {
      await trx('deliveries').whereIn('message_id', ids).delete();
      const removed = await trx('messages').whereIn('id', ids).delete();
      if (removed === 0 && attempt.uncertain) return earlier;
      earlier = removed;
      return removed;
    });
    if (ids.length < batchSize) return deleted;
  }
}

/** Heads removed with the rest hand their ordering keys' lines to what is left (src/store/ordering/lines.ts). */
export async function purgeTopic(db: Knex, topic: string, statuses: string[], now: number): Promise<number> {
  const deleted = await deleteInBatches(db, () => db('messages').where({ topic }).whereIn('status', statuses));
  await repairLines(db, now, topic);
  return deleted;
}

export async function deleteByKey(db: Knex, topic: string, key: string, now: number): Promise<number> {
  const deleted = await deleteInBatches(db, () => db('messages').where({ topic, msg_key: key }));
  await repairLines(db, now, topic);
  return deleted;
}
