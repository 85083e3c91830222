import type { Knex } from 'knex';
import { withDbRetry } from '../retry.js';
import { giveBackMessages } from './give-back.js';
import { WITHOUT_DELIVERIES } from './settle.js';

/**
 * Moves the visibility deadline of a processing message without a consumer group to `until` (a heartbeat
 * that extends the claim, or a shorter one). The row stays in messages_queue order by its new deadline, where
 * the visibility sweep finds it. The topic, or null when the message is not processing.
 */
export async function moveClaimDeadline(db: Knex, id: string, until: number): Promise<string | null> {
  return withDbRetry(db, async () => {
    const row = (await db('messages').select('topic').where({ id, status: 'processing' }).whereRaw(WITHOUT_DELIVERIES).first()) as { topic: string } | undefined;
    if (!row) return null;
    const moved = await db('messages').where({ id, status: 'processing' }).update({ visible_at: until });
    return moved > 0 ? row.topic : null;
  });
}

/**
 * Gives a processing message back at once without counting an attempt, as a claim nobody was handed is
 * (give-back.ts): only while it is still under the claim read here. The topic, or null when it was not
 * processing.
 */
export async function releaseClaim(db: Knex, id: string, now: number): Promise<string | null> {
  const row = (await withDbRetry(db, () => db('messages').select('topic', 'visible_at').where({ id, status: 'processing' }).whereRaw(WITHOUT_DELIVERIES).first())) as
    | { topic: string; visible_at: number | string }
    | undefined;
  if (!row) return null;
  await giveBackMessages(db, [{ id, claimedUntil: Number(row.visible_at) }], now);
  return row.topic;
}
