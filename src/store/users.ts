import type { Knex } from 'knex';
import { isUniqueViolation } from './dialect.js';
import type { ManagerGuard } from './managed-rows.js';
import { retryTransaction, withDbRetry } from './retry.js';

export interface UserRow {
  id: string;
  username: string;
  password_hash: string;
  is_admin: boolean;
  created_at: number;
  updated_at: number;
  /** Raised by every password change; tokens issued under an older one are over. */
  password_version: number;
  /** A Kubernetes service account's principal: no password (hash ""), never an admin, named by its token. */
  service_account: boolean;
}

function normalise(raw: Record<string, unknown>): UserRow {
  return {
    id: String(raw.id),
    username: String(raw.username),
    password_hash: String(raw.password_hash),
    is_admin: Boolean(raw.is_admin),
    created_at: Number(raw.created_at),
    updated_at: Number(raw.updated_at),
    password_version: Number(raw.password_version ?? 0),
    service_account: Boolean(raw.service_account),
  };
}

export async function listUsers(db: Knex): Promise<UserRow[]> {
  return (await db('users').select('*').orderBy('username')).map(normalise);
}

export async function getUser(db: Knex, id: string): Promise<UserRow | null> {
  const row = await db('users').where({ id }).first();
  return row ? normalise(row) : null;
}

export async function findUserByName(db: Knex, username: string): Promise<UserRow | null> {
  // Compared again here: MySQL's utf8mb4_bin ignores trailing spaces, so `alice ` would find `alice` there.
  const row = await db('users').where({ username }).first();
  return row && String(row.username) === username ? normalise(row) : null;
}

/**
 * Throws the engine's unique violation when the username is taken; the caller maps it. Retried; the id is
 * made before the insert, so a re-run after a lost answer that collides with a row of that very id stored it.
 */
export async function insertUser(db: Knex, row: UserRow): Promise<void> {
  await withDbRetry(db, async (attempt) => {
    try {
      await db('users').insert({ ...row });
    } catch (err) {
      if (attempt.uncertain && isUniqueViolation(err) && (await db('users').where({ id: row.id }).first('id'))) return;
      throw err;
    }
  });
}

export type UserChanges = Partial<Pick<UserRow, 'username' | 'password_hash' | 'is_admin'>>;

/**
 * Applies the changes unless they would demote the last admin. The admin count is read under the write lock
 * (FOR UPDATE on MySQL; SQLite transactions here start with BEGIN IMMEDIATE), so two concurrent demotions
 * cannot both see "another admin is left".
 */
export async function updateUser(db: Knex, id: string, changes: UserChanges, now: number): Promise<'updated' | 'not_found' | 'last_admin'> {
  // Two admins demoting each other lock each other's rows in opposite order: InnoDB picks a victim, we retry it.
  // A re-run after a lost commit answer applies the same values again, which changes nothing (the password
  // version may rise twice: it only has to move on).
  return retryTransaction(db, async (trx) => {
    const current = await trx('users').where({ id }).forUpdate().first('is_admin');
    if (!current) return 'not_found';
    if (Boolean(current.is_admin) && changes.is_admin === false && (await otherAdmins(trx, id)) === 0) return 'last_admin';
    // A new password (even the same one again) ends the tokens issued under the old version.
    const version = changes.password_hash === undefined ? {} : { password_version: trx.raw('password_version + 1') };
    await trx('users').where({ id }).update({ ...changes, ...version, updated_at: now });
    return 'updated';
  });
}

/**
 * Deletes the user, its grants and its access keys unless it is the last admin; same locking as updateUser. A re-run after a
 * lost commit answer that finds the user gone answers "deleted", as the lost attempt did.
 */
/** `guard` sees the manager of one of the user's grants a Kubernetes resource owns (undefined: none), and may refuse. */
export async function deleteUser(db: Knex, id: string, guard: ManagerGuard = () => {}): Promise<'deleted' | 'not_found' | 'last_admin'> {
  let deletedEarlier = false;
  return retryTransaction(db, async (trx, attempt) => {
    const current = await trx('users').where({ id }).forUpdate().first('is_admin');
    if (!current) return attempt.uncertain && deletedEarlier ? 'deleted' : 'not_found';
    if (Boolean(current.is_admin) && (await otherAdmins(trx, id)) === 0) return 'last_admin';
    const managed = await trx('grants').where({ user_id: id }).whereNot({ managed_by: '' }).first('managed_by');
    guard(managed ? String(managed.managed_by) : undefined);
    await trx('grants').where({ user_id: id }).delete();
    await trx('access_keys').where({ user_id: id }).delete();
    await trx('users').where({ id }).delete();
    deletedEarlier = true;
    return 'deleted';
  });
}

async function otherAdmins(trx: Knex.Transaction, id: string): Promise<number> {
  const rows = await trx('users').where({ is_admin: true }).whereNot({ id }).forUpdate().select('id');
  return rows.length;
}
