import type { Knex } from 'knex';
import { withDbRetry } from './retry.js';

const TABLE = 'sqs_deduplication';

/**
 * Takes (topic, dedupId) for `holder` until `expiresAt`, unless a live row holds it already: a row past its
 * time is removed first. Resolves to whoever holds it now (`holder` when taken). Retried whole: a re-run
 * after a lost answer finds its own row.
 */
export async function takeDeduplication(db: Knex, row: { topic: string; dedupId: string; holder: string; expiresAt: number }, now: number): Promise<string> {
  const where = { topic: row.topic, dedup_id: row.dedupId };
  return withDbRetry(db, async () => {
    await db(TABLE).where(where).andWhere('expires_at', '<=', now).delete();
    await db(TABLE).insert({ ...where, message_id: row.holder, expires_at: row.expiresAt }).onConflict(['topic', 'dedup_id']).ignore();
    const found = (await db(TABLE).where(where).first('message_id')) as { message_id?: unknown } | undefined;
    return found?.message_id == null ? row.holder : String(found.message_id);
  });
}

/** Who holds (topic, dedupId) now, or null. */
export async function deduplicationHolder(db: Knex, topic: string, dedupId: string): Promise<string | null> {
  const found = (await withDbRetry(db, () => db(TABLE).where({ topic, dedup_id: dedupId }).first('message_id'))) as { message_id?: unknown } | undefined;
  return found?.message_id == null ? null : String(found.message_id);
}

/** Hands a row from `holder` (a placeholder) to the message stored for it, or removes it (`messageId` null: the send failed). */
export async function settleDeduplication(db: Knex, topic: string, dedupId: string, holder: string, messageId: string | null): Promise<void> {
  const row = db(TABLE).where({ topic, dedup_id: dedupId, message_id: holder });
  await withDbRetry(db, () => (messageId === null ? row.clone().delete() : row.clone().update({ message_id: messageId })));
}

/** Removes the rows past their time (small rows, swept often: one statement). */
export async function sweepDeduplication(db: Knex, now: number): Promise<number> {
  return withDbRetry(db, () => db(TABLE).where('expires_at', '<=', now).delete());
}
