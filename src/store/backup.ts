import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Knex } from 'knex';
import { engineOf } from './dialect.js';

/** Why a backup was not written: said as is, on one line (conveyor backup exits 1). */
export class BackupRefused extends Error {}

/**
 * Writes a consistent copy of an SQLite database to `target`, a new file. VACUUM INTO reads the database in
 * one read transaction: under WAL, writers (a running `serve`) do not wait for it, and the copy holds exactly
 * what was committed when it began. The copy is compacted and has no WAL of its own, so it opens as it is.
 */
export async function backupSqlite(db: Knex, target: string): Promise<{ path: string; bytes: number }> {
  if (engineOf(db) !== 'sqlite') {
    throw new BackupRefused('conveyor backup copies the embedded SQLite database; back MySQL/MariaDB up with its own tools (mysqldump --single-transaction, mariabackup)');
  }
  const path = resolve(target);
  if (existsSync(path)) throw new BackupRefused(`${path} exists; a backup goes to a new file`);
  await db.raw('VACUUM INTO ?', [path]);
  return { path, bytes: statSync(path).size };
}
