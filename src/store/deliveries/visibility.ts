import type { Knex } from 'knex';
import { withDbRetry } from '../retry.js';
import { giveBackDeliveries } from './give-back.js';

type ProcessingDelivery = { topic: string; visible_at: number | string } | undefined;

const processing = (db: Knex, id: string, group: string) =>
  withDbRetry(db, () => db('deliveries').select('topic', 'visible_at').where({ message_id: id, consumer_group: group, status: 'processing' }).first()) as Promise<ProcessingDelivery>;

/** A group's processing delivery gets the deadline `until`; its topic, or null when it is not processing. */
export async function moveDeliveryDeadline(db: Knex, id: string, group: string, until: number): Promise<string | null> {
  const row = await processing(db, id, group);
  if (!row) return null;
  const moved = await withDbRetry(db, () => db('deliveries').where({ message_id: id, consumer_group: group, status: 'processing' }).update({ visible_at: until }));
  return moved > 0 ? row.topic : null;
}

/** A group's processing delivery is pending again at once, without an attempt counted; its topic, or null. */
export async function releaseDeliveryClaim(db: Knex, id: string, group: string): Promise<string | null> {
  const row = await processing(db, id, group);
  if (!row) return null;
  await giveBackDeliveries(db, group, [{ id, claimedUntil: Number(row.visible_at) }]);
  return row.topic;
}
