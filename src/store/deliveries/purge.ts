import type { Knex } from 'knex';
import { repairLines } from '../ordering/lines.js';
import { purgeTopic } from '../messages/remove.js';
import { dropDeliveries } from './complete.js';

/**
 * Purge on a fan-out topic acts per group: every group's deliveries in the chosen statuses go, and messages
 * no group still works on then leave the topic (archived when some group acked them and the topic is
 * replayable). A message row's own `pending` or `processing` only says whether some group has claimed it, so
 * it is never purged by that status, which would take the other groups' deliveries with it; rows in the
 * chosen statuses that are the message's own (expired) are removed as on any topic. Returns the messages removed
 * (not those only marked expired because the group left was one whose TTL ran out: they stay for the reaper).
 */
export async function purgeFanOutTopic(db: Knex, topic: string, statuses: string[], replayable: boolean, now: number): Promise<number> {
  const { removed } = await dropDeliveries(db, topic, (query) => query.whereIn('status', statuses), replayable, now);
  const ownStatuses = statuses.filter((status) => status !== 'pending' && status !== 'processing');
  const own = ownStatuses.length > 0 ? await purgeTopic(db, topic, ownStatuses, now) : await repairLines(db, now, topic).then(() => 0);
  return removed + own;
}
