import { loadConfig } from '../config/load.js';
import { createStderrLogger } from '../log/logger.js';
import { assertOpenableDbUrl } from './db-url.js';
import { CONFIG_OPTION, HELP_OPTION, type CommandHelp } from './help.js';
import { quietConnectionLogger } from './one-shot.js';

export const backupHelp: CommandHelp = {
  name: 'backup',
  synopsis: 'conveyor backup FILE [--config FILE]',
  summary: 'copy the embedded SQLite database to a new file, beside a running service, and exit',
  description: `Writes a consistent copy of the SQLite database (db.url sqlite:...) to FILE, which must not exist,
and prints {"backup":"<absolute path>","bytes":N} on stdout. It runs beside conveyor serve, which goes on
writing meanwhile: the copy is one read transaction (SQLite's VACUUM INTO) and holds everything committed
when it began. To restore: stop the service, replace the database file with the copy, delete the -wal and
-shm files beside it, and start the service again.
MySQL/MariaDB are not copied here: use the database's own tools (mysqldump --single-transaction, mariabackup).`,
  options: [CONFIG_OPTION, HELP_OPTION],
  config: ['db.url', 'db.url_file', 'db.lock_wait_timeout', 'log.level'],
  exitCodes: '0 when the copy is written; 2 without FILE or for an invalid configuration; 1 when FILE exists, there is no database file at db.url, the database is MySQL/MariaDB, or the copy fails (one line on stderr).',
};

export class BackupUsageError extends Error {}

export async function backup(configPath: string | undefined, target: string | undefined): Promise<void> {
  if (!target) throw new BackupUsageError('backup needs the file to write the copy to');
  const config = loadConfig({ configPath });
  await assertOpenableDbUrl(config.db.url);
  const { createDb, describeDb } = await import('../store/db.js');
  const { backupSqlite, checkBackupSource } = await import('../store/backup.js');
  checkBackupSource(describeDb(config.db.url));
  const db = createDb({ url: config.db.url, logger: quietConnectionLogger(createStderrLogger(config.log.level)), lockWaitTimeoutSeconds: config.db.lock_wait_timeout });
  try {
    const { path, bytes } = await backupSqlite(db, target);
    process.stdout.write(`${JSON.stringify({ backup: path, bytes })}\n`);
  } finally {
    await db.destroy();
  }
}
