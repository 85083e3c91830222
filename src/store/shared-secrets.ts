import type { Knex } from 'knex';
import { withDbRetry } from './retry.js';

/**
 * A value every instance of the service must share (a signing key), in the `settings` table: the first
 * instance to need it stores its candidate, the others keep that one (an insert that ignores a conflict,
 * then a read), so two instances starting together still agree.
 */
export async function sharedSetting(db: Knex, name: string, candidate: string): Promise<string> {
  await withDbRetry(db, () => db('settings').insert({ name, value: candidate, revision: 0 }).onConflict('name').ignore());
  const row = (await withDbRetry(db, () => db('settings').where({ name }).first('value'))) as { value?: unknown } | undefined;
  if (row?.value == null) throw new Error(`setting ${name} could not be stored`);
  return String(row.value);
}
