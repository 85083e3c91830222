import type { Knex } from 'knex';
import { isUniqueViolation } from './dialect.js';
import { insertGrant, type GrantRow } from './grants.js';
import { retryTransaction } from './retry.js';

/**
 * The controller's writes to grants a ConveyorAccess owns. Each is conditional on the row's manager, so a grant
 * the HTTP API or another resource holds is never changed by a resource that merely read it a moment ago.
 */

/** False when the identical grant exists already (made through the HTTP API meanwhile): the caller reads again. */
export async function insertManagedGrant(db: Knex, row: GrantRow): Promise<boolean> {
  try {
    await insertGrant(db, row);
    return true;
  } catch (err) {
    if (isUniqueViolation(err)) return false;
    throw err;
  }
}

/** Hands a grant from `from` to `to` ("" = the HTTP API); false when its manager was no longer `from`. */
export async function setGrantManager(db: Knex, grantId: string, from: string, to: string): Promise<boolean> {
  let changedEarlier = false;
  return retryTransaction(db, async (trx, attempt) => {
    const updated = await trx('grants').where({ id: grantId, managed_by: from }).update({ managed_by: to });
    if (updated === 0 && attempt.uncertain && changedEarlier) return (await trx('grants').where({ id: grantId, managed_by: to }).first('id')) !== undefined;
    changedEarlier = updated > 0;
    return updated > 0;
  });
}

/** Removes a grant only while `owner` manages it; a re-run after a lost answer finds it gone, which is the same. */
export async function deleteManagedGrant(db: Knex, grantId: string, owner: string): Promise<void> {
  await retryTransaction(db, (trx) => trx('grants').where({ id: grantId, managed_by: owner }).delete());
}
