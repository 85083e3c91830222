import type { Knex } from 'knex';
import { retryTransaction, withDbRetry } from './retry.js';

export interface AccessKeyRow {
  /** The access key id, `CVAK...`: public, the row's primary key. */
  id: string;
  user_id: string;
  /** The secret, encrypted (src/auth/credentials-cipher.ts); never the secret itself. */
  secret_ciphertext: string;
  /** Which credentials key encrypted it (its fingerprint). */
  key_id: string;
  created_at: number;
  last_used_at: number | null;
}

function normalise(raw: Record<string, unknown>): AccessKeyRow {
  return {
    id: String(raw.id),
    user_id: String(raw.user_id),
    secret_ciphertext: String(raw.secret_ciphertext),
    key_id: String(raw.key_id),
    created_at: Number(raw.created_at),
    last_used_at: raw.last_used_at === null || raw.last_used_at === undefined ? null : Number(raw.last_used_at),
  };
}

/** One primary-key read: what every request authenticated by an access key costs the database. */
export async function getAccessKey(db: Knex, id: string): Promise<AccessKeyRow | null> {
  const row = await db('access_keys').where({ id }).first();
  return row ? normalise(row) : null;
}

export async function listAccessKeys(db: Knex, userId: string): Promise<AccessKeyRow[]> {
  return (await db('access_keys').where({ user_id: userId }).select('*').orderBy(['created_at', 'id'])).map(normalise);
}

/**
 * Stores the key unless its user already holds `max` keys. The count is read under the user's row lock (FOR
 * UPDATE on MySQL; BEGIN IMMEDIATE on SQLite), so two concurrent creations cannot both see room for one more.
 * A re-run after a lost commit answer that finds a row of this very id (made before the insert) stored it.
 */
export async function insertAccessKey(db: Knex, row: AccessKeyRow, max: number): Promise<'created' | 'no_user' | 'limit'> {
  return retryTransaction(db, async (trx, attempt) => {
    if (attempt.uncertain && (await trx('access_keys').where({ id: row.id }).first('id'))) return 'created';
    if (!(await trx('users').where({ id: row.user_id }).forUpdate().first('id'))) return 'no_user';
    const [{ n }] = await trx('access_keys').where({ user_id: row.user_id }).count({ n: '*' });
    if (Number(n) >= max) return 'limit';
    await trx('access_keys').insert({ ...row });
    return 'created';
  });
}

/** Scoped to the user, so the key id of another user deletes nothing (404); a re-run after a lost answer knows it existed. */
export async function deleteAccessKey(db: Knex, userId: string, id: string): Promise<boolean> {
  let existed = false;
  return retryTransaction(db, async (trx, attempt) => {
    const found = (await trx('access_keys').where({ id, user_id: userId }).first('id')) !== undefined;
    if (!found) return attempt.uncertain && existed;
    existed = true;
    return (await trx('access_keys').where({ id, user_id: userId }).delete()) > 0;
  });
}

/** Records a use; at most one write per key and `everyMs` (the condition), whichever instance served it. */
export async function touchAccessKey(db: Knex, id: string, at: number, everyMs: number): Promise<void> {
  await withDbRetry(db, () =>
    db('access_keys')
      .where({ id })
      .andWhere((q) => q.whereNull('last_used_at').orWhere('last_used_at', '<=', at - everyMs))
      .update({ last_used_at: at }),
  );
}

/** A page of keys in id order, after `afterId`: the rotation walks the table with it. */
export async function accessKeysAfter(db: Knex, afterId: string, limit: number): Promise<AccessKeyRow[]> {
  return (await db('access_keys').where('id', '>', afterId).orderBy('id').limit(limit).select('*')).map(normalise);
}

/**
 * Replaces a key's ciphertext only while it is still the one read (a compare-and-set), so a rotation never
 * writes over a key revoked or re-encrypted meanwhile. Retried; the same values again change nothing.
 */
export async function replaceCiphertext(db: Knex, id: string, from: Pick<AccessKeyRow, 'secret_ciphertext' | 'key_id'>, to: Pick<AccessKeyRow, 'secret_ciphertext' | 'key_id'>): Promise<boolean> {
  return withDbRetry(db, async () => {
    const changed = await db('access_keys').where({ id, secret_ciphertext: from.secret_ciphertext, key_id: from.key_id }).update({ ...to });
    if (changed > 0) return true;
    // Already done by an attempt whose answer was lost.
    return (await db('access_keys').where({ id, ...to }).first('id')) !== undefined;
  });
}
