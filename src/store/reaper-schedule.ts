import type { Knex } from 'knex';
import { retryTransaction } from './retry.js';
import { bumpCatalogRevision, getSetting } from './settings.js';

const SCHEDULE = 'delete_reaper_schedule';

/** The stored delete-reaper schedule; null until a PUT stored one (then "" too is a stored value). */
export function storedDeleteSchedule(db: Knex): Promise<string | null> {
  return getSetting(db, SCHEDULE);
}

/**
 * Stores the schedule and bumps the catalog revision, so every instance's poll picks it up. Retried whole; a
 * re-run after a lost commit answer stores the same value and bumps the revision once more (harmless: a
 * revision only says "reload").
 */
export async function storeDeleteSchedule(db: Knex, schedule: string): Promise<void> {
  await retryTransaction(db, async (trx) => {
    await trx('settings').insert({ name: SCHEDULE, value: schedule, revision: 0 }).onConflict('name').merge(['value']);
    await bumpCatalogRevision(trx);
  });
}
