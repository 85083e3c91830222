import type { Knex } from 'knex';
import { isUniqueViolation } from '../dialect.js';
import { retryTransaction } from '../retry.js';
import { returnToPending } from './settle.js';

/** A claimed message, named with the end of the claim that took it. */
export interface HeldClaim {
  id: string;
  claimedUntil: number;
}

/**
 * Claimed messages that no consumer was given (a Subscribe feed whose streams left or filled up while its
 * claim ran) go back to pending without an attempt: a visibility timeout would count one
 * against a message nobody saw, and dead-letter it after a few reconnects. Only rows still under that very
 * claim are touched (`processing` until `claimedUntil`): one whose claim lapsed may be another consumer's.
 * Where another pending message took the key meanwhile, the newer of the two keeps it, as for a retry
 * (returnToPending). Returns how many messages were superseded so.
 */
export async function giveBackMessages(db: Knex, claims: HeldClaim[], now: number): Promise<number> {
  return retryTransaction(db, async (trx) => {
    let superseded = 0;
    for (const [until, ids] of byClaimEnd(claims)) {
      const underClaim = () => trx('messages').whereIn('id', ids).andWhere({ status: 'processing', visible_at: until });
      try {
        await underClaim().update({ status: 'pending', visible_at: 0 });
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
        // A failed statement changes nothing and leaves the transaction open on both engines: row by row.
        const held = (await underClaim().pluck('id')).map(String);
        for (const id of held) if ((await returnToPending(trx, id, {}, now)) !== 'pending') superseded++;
      }
    }
    return superseded;
  });
}

/** Ids by the end of their claim: one statement per claim. */
export function byClaimEnd(claims: HeldClaim[]): Map<number, string[]> {
  const groups = new Map<number, string[]>();
  for (const { id, claimedUntil } of claims) {
    const ids = groups.get(claimedUntil);
    if (ids) ids.push(id);
    else groups.set(claimedUntil, [id]);
  }
  return groups;
}
