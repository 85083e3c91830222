import type { Knex } from 'knex';
import { retryTransaction } from './retry.js';
import { capabilities } from './capabilities.js';
import { bumpCatalogRevision } from './settings.js';

/** Tables whose rows a Kubernetes resource can own (`managed_by`, "" = nobody). */
export type ManagedTable = 'topic_configs' | 'topic_schemas' | 'consumer_groups';

/**
 * Called inside a write's transaction with the row's current manager (undefined: no row). It throws to refuse
 * the write; reading the manager under the row lock (MySQL) or the write lock (SQLite's BEGIN IMMEDIATE) means
 * the controller cannot adopt the row between the check and the write.
 */
export type ManagerGuard = (current: string | undefined) => void;

export async function lockedManager(trx: Knex.Transaction, table: ManagedTable, where: Record<string, string>): Promise<string | undefined> {
  const query = trx(table).where(where);
  const row = await (capabilities(trx).rowLocks ? query.forUpdate() : query).first('managed_by');
  return row ? String(row.managed_by ?? '') : undefined;
}

/**
 * Hands a row to another manager ("" releases it), only from `from` when given; false when nothing changed.
 * Retried whole; a re-run after a lost commit answer that finds the row already handed over (so `from` no
 * longer matches) answers what the lost attempt did.
 */
export async function setManager(db: Knex, table: ManagedTable, where: Record<string, string>, managedBy: string, from?: string): Promise<boolean> {
  let changedEarlier = false;
  return retryTransaction(db, async (trx, attempt) => {
    const updated = await trx(table)
      .where(from === undefined ? where : { ...where, managed_by: from })
      .update({ managed_by: managedBy });
    if (updated > 0) await bumpCatalogRevision(trx);
    else if (attempt.uncertain && changedEarlier && (await lockedManager(trx, table, where)) === managedBy) return true;
    changedEarlier = updated > 0;
    return updated > 0;
  });
}
