import type { Knex } from 'knex';
import { retryTransaction } from '../retry.js';
import { purgeTopic } from '../messages/remove.js';
import { completeSettled } from './complete.js';

/**
 * Purge on a fan-out topic acts per group: every group's deliveries in the chosen statuses go (1,000 per
 * statement), then messages no group still works on leave the topic (archived when some group acked them
 * and the topic is replayable), and message rows in the chosen statuses (e.g. expired) are removed as on
 * any topic. Returns the messages removed.
 */
export async function purgeFanOutTopic(db: Knex, topic: string, statuses: string[], replayable: boolean, now: number): Promise<number> {
  for (;;) {
    const batch = await db('deliveries').select('message_id', 'consumer_group').where({ topic }).whereIn('status', statuses).limit(1000);
    if (batch.length === 0) break;
    // Retried whole; deleting what is already gone changes nothing, so a re-run is harmless.
    await retryTransaction(db, async (trx) => {
      for (const group of new Set(batch.map((r: { consumer_group: string }) => r.consumer_group))) {
        const ids = batch.filter((r: { consumer_group: string }) => r.consumer_group === group).map((r: { message_id: string }) => r.message_id);
        await trx('deliveries').where({ consumer_group: group }).whereIn('message_id', ids).whereIn('status', statuses).delete();
      }
    });
    if (batch.length < 1000) break;
  }
  const removedRows = await purgeTopic(db, topic, statuses);
  return removedRows + (await completeSettled(db, topic, replayable, now));
}
