import type { Knex } from 'knex';
import { retryTransaction } from '../retry.js';
import { byClaimEnd, type HeldClaim } from '../messages/give-back.js';

/** The group's deliveries of the same kind of claim (src/store/messages/give-back.ts); a delivery has no key to lose. */
export async function giveBackDeliveries(db: Knex, group: string, claims: HeldClaim[]): Promise<void> {
  await retryTransaction(db, async (trx) => {
    for (const [until, ids] of byClaimEnd(claims)) {
      await trx('deliveries').where({ consumer_group: group, status: 'processing', visible_at: until }).whereIn('message_id', ids).update({ status: 'pending', visible_at: 0 });
    }
  });
}
