import type { Knex } from 'knex';
import { withDbRetry } from './retry.js';

/**
 * The catalog revision rises in the same transaction as every change to topic configurations, schemas or
 * consumer groups; instances poll it (one primary-key read) and reload their caches when it moved.
 */
export async function bumpCatalogRevision(trx: Knex.Transaction): Promise<void> {
  await trx('settings').where({ name: 'catalog' }).increment('revision', 1);
}

export async function catalogRevision(db: Knex): Promise<number> {
  const row = await db('settings').where({ name: 'catalog' }).first('revision');
  return Number(row?.revision ?? 0);
}

export async function getSetting(db: Knex, name: string): Promise<string | null> {
  const row = await db('settings').where({ name }).first('value');
  return row ? String(row.value) : null;
}

/** An upsert of one value: retried, and a re-run after a lost answer writes the same value again. */
export async function putSetting(db: Knex, name: string, value: string): Promise<void> {
  await withDbRetry(db, () => db('settings').insert({ name, value, revision: 0 }).onConflict('name').merge(['value']));
}
