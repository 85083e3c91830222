import type { Knex } from 'knex';
import { capabilities } from './capabilities.js';

/**
 * Token bucket of a topic's throughput_limit: capacity one second of tokens, starting full.
 * Runs `spend(granted)` with the whole tokens available and charges only what it reports back as used.
 */
export async function takeTokens<T extends unknown[]>(
  trx: Knex.Transaction,
  topic: string,
  ratePerSecond: number,
  now: number,
  wanted: number,
  spend: (granted: number) => Promise<T>,
): Promise<T> {
  const { rowLocks } = capabilities(trx);
  const lock = trx('topic_buckets').where({ topic });
  let row = await (rowLocks ? lock.forUpdate() : lock).first('tokens', 'refilled_at');
  if (!row) {
    // First use: insert a full bucket. A concurrent first use on another instance is resolved by the primary key.
    await trx('topic_buckets').insert({ topic, tokens: ratePerSecond, refilled_at: now }).onConflict('topic').ignore();
    row = await (rowLocks ? trx('topic_buckets').where({ topic }).forUpdate() : trx('topic_buckets').where({ topic })).first(
      'tokens',
      'refilled_at',
    );
  }
  const refilledAt = Number(row.refilled_at);
  const elapsedSeconds = Math.max(0, now - refilledAt) / 1000;
  const tokens = Math.min(ratePerSecond, Number(row.tokens) + elapsedSeconds * ratePerSecond);
  const granted = Math.min(wanted, Math.floor(tokens));
  const spent = granted > 0 ? await spend(granted) : ([] as unknown as T);
  // The refill time does not move back by a little: a claim whose clock reads earlier (another instance's
  // clock a little behind, a claim that read the time before waiting for this row's lock) would otherwise
  // credit the same interval again to the next claim, and instances alternating would exceed the limit. Nor is
  // it kept more than the bucket's one second ahead: a clock stepped back, or one instance's far ahead, would
  // leave the topic without tokens until the clocks met again.
  const refilled = refilledAt > now && refilledAt - now <= 1000 ? refilledAt : now;
  await trx('topic_buckets').where({ topic }).update({ tokens: tokens - spent.length, refilled_at: refilled });
  return spent;
}
