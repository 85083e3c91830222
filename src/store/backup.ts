import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Knex } from 'knex';
import type { DbDescription } from './db.js';

/** Why a backup was not written: said as is, on one line (conveyor backup exits 1). */
export class BackupRefused extends Error {}

/** Refuses, before anything is opened (opening an SQLite path creates an empty database there), what cannot be copied. */
export function checkBackupSource({ kind, location }: DbDescription): void {
  if (kind !== 'sqlite') {
    throw new BackupRefused('conveyor backup copies the embedded SQLite database; back MySQL/MariaDB up with its own tools (mysqldump --single-transaction, mariabackup)');
  }
  if (location === ':memory:' || !existsSync(location)) throw new BackupRefused(`no database at ${location} (db.url): nothing to back up`);
}

/**
 * Writes a consistent copy of an SQLite database to `target`, a new file. VACUUM INTO reads the database in
 * one read transaction: under WAL, writers (a running `serve`) do not wait for it, and the copy holds exactly
 * what was committed when it began. The copy is compacted and has no WAL of its own, so it opens as it is.
 */
export async function backupSqlite(db: Knex, target: string): Promise<{ path: string; bytes: number }> {
  const path = resolve(target);
  if (existsSync(path)) throw new BackupRefused(`${path} exists; a backup goes to a new file`);
  await db.raw('VACUUM INTO ?', [path]);
  return { path, bytes: statSync(path).size };
}
