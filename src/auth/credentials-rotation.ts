import type { Knex } from 'knex';
import { accessKeysAfter, replaceCiphertext } from '../store/access-keys.js';
import type { CredentialsCipher } from './credentials-cipher.js';

const PAGE = 500;

export interface RotationResult {
  /** Keys now encrypted under auth.credentials_key that were not before. */
  reencrypted: number;
  /** Keys that already were. */
  current: number;
  /** Ids of keys under a credentials key that is neither the current nor the previous one: left as they are. */
  unreadable: string[];
}

/**
 * Re-encrypts every access key's secret under the current credentials key (docs/auth.md, Rotating the
 * credentials key), reading the old ones with the previous key. Safe beside running instances and safe to run
 * again: a row is replaced only while it still holds what was read, and one already current is left alone.
 */
export async function reencryptAccessKeys(db: Knex, cipher: CredentialsCipher): Promise<RotationResult> {
  const result: RotationResult = { reencrypted: 0, current: 0, unreadable: [] };
  for (let after = '', page = await accessKeysAfter(db, after, PAGE); page.length > 0; page = await accessKeysAfter(db, after, PAGE)) {
    for (const row of page) {
      const stored = { secret_ciphertext: row.secret_ciphertext, key_id: row.key_id };
      if (row.key_id === cipher.currentKeyId) {
        result.current++;
        continue;
      }
      const secret = cipher.open({ ciphertext: row.secret_ciphertext, keyId: row.key_id }, row.id);
      if (secret === null) {
        result.unreadable.push(row.id);
        continue;
      }
      const sealed = cipher.seal(secret, row.id);
      if (await replaceCiphertext(db, row.id, stored, { secret_ciphertext: sealed.ciphertext, key_id: sealed.keyId })) result.reencrypted++;
    }
    after = page[page.length - 1].id;
  }
  return result;
}
