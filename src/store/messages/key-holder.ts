import type { Knex } from 'knex';
import { capabilities } from '../capabilities.js';

/** The pending message holding (topic, key), through the pending-key unique index on both engines. */
export function pendingKeyHolder(trx: Knex.Transaction, topic: string, key: string): Knex.QueryBuilder {
  return capabilities(trx).partialIndexes
    ? trx('messages').where({ topic, msg_key: key, status: 'pending', original_topic: '' })
    : trx('messages').where({ topic, pending_key: key });
}

/**
 * A pending message whose TTL has passed is never delivered again, so it must not hold its
 * key: an upsert into it would silently drop the new payload, a message returning to pending would be
 * superseded by it. It is marked expired here, as the expiry reaper would, which frees the key.
 */
export async function expireStaleKeyHolder(trx: Knex.Transaction, topic: string, key: string, now: number): Promise<void> {
  const stale = await pendingKeyHolder(trx, topic, key).andWhere('expires_at', '<=', now).first('id');
  if (!stale) return;
  await trx('messages').where({ id: stale.id }).update({ status: 'expired' });
  await trx('deliveries').where({ message_id: stale.id, status: 'pending' }).update({ status: 'expired' });
}
