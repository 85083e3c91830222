import type { Knex } from 'knex';
import { capabilities } from './capabilities.js';
import { isUniqueViolation } from './dialect.js';
import type { ManagerGuard } from './managed-rows.js';
import { retryTransaction, withDbRetry } from './retry.js';

export interface GrantRow {
  id: string;
  user_id: string;
  action: string;
  topic_pattern: string;
  consumer_group: string;
  created_at: number;
  /** The resource that owns the grant (`Kind/namespace/name`, a ConveyorAccess); "" = the HTTP API's. */
  managed_by: string;
}

function normalise(raw: Record<string, unknown>): GrantRow {
  return {
    id: String(raw.id),
    user_id: String(raw.user_id),
    action: String(raw.action),
    topic_pattern: String(raw.topic_pattern),
    consumer_group: String(raw.consumer_group ?? ''),
    created_at: Number(raw.created_at),
    managed_by: String(raw.managed_by ?? ''),
  };
}

export async function listGrants(db: Knex, userId: string): Promise<GrantRow[]> {
  return (await db('grants').where({ user_id: userId }).select('*').orderBy(['created_at', 'id'])).map(normalise);
}

/**
 * Throws the engine's unique violation for a duplicate (user, action, pattern, group); the caller maps it.
 * Retried; a re-run after a lost answer that collides with a row of this very id (made before the insert) stored it.
 */
export async function insertGrant(db: Knex, row: GrantRow): Promise<void> {
  await withDbRetry(db, async (attempt) => {
    try {
      await db('grants').insert({ ...row });
    } catch (err) {
      if (attempt.uncertain && isUniqueViolation(err) && (await db('grants').where({ id: row.id }).first('id'))) return;
      throw err;
    }
  });
}

/**
 * Scoped to the user, so a grant id of another user deletes nothing (404). The row is read first (locked) in
 * the same transaction, so a re-run after a lost commit answer knows the grant existed and answers "deleted",
 * and `guard` sees the grant's manager where the controller cannot adopt it between the check and the delete.
 */
export async function deleteGrant(db: Knex, userId: string, grantId: string, guard: ManagerGuard = () => {}): Promise<boolean> {
  let existed = false;
  return retryTransaction(db, async (trx, attempt) => {
    const query = trx('grants').where({ id: grantId, user_id: userId });
    const found = await (capabilities(trx).rowLocks ? query.forUpdate() : query).first('managed_by');
    if (!found) return attempt.uncertain && existed;
    guard(String(found.managed_by ?? ''));
    existed = true;
    return (await trx('grants').where({ id: grantId, user_id: userId }).delete()) > 0;
  });
}
