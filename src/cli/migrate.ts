import { loadConfig } from '../config/load.js';
import { createStderrLogger } from '../log/logger.js';
import { assertOpenableDbUrl } from './db-url.js';
import { CONFIG_OPTION, HELP_OPTION, type CommandHelp } from './help.js';
import { quietConnectionLogger } from './one-shot.js';

export const migrateHelp: CommandHelp = {
  name: 'migrate',
  synopsis: 'conveyor migrate [--config FILE]',
  summary: 'apply pending database migrations and exit',
  description: `Applies the pending database migrations and prints {"applied": [...]} on stdout (an empty list when
there was nothing to do, or when a newer release migrated the database: then a warning names its migrations,
which this release runs on as they are). Safe to run from many pods at once: a lease row (the leases table) serialises them.
conveyor serve migrates at start-up too; this command is for init containers and upgrades.`,
  options: [CONFIG_OPTION, HELP_OPTION],
  config: ['db.url', 'db.url_file', 'db.lock_wait_timeout', 'log.level'],
  exitCodes: '0 when the database is up to date; 2 for an invalid configuration; 1 when a migration fails or the database cannot be reached.',
};

export async function runMigrations(configPath: string | undefined): Promise<void> {
  const config = loadConfig({ configPath });
  await assertOpenableDbUrl(config.db.url);
  const { createDb, migrate } = await import('../store/db.js');
  const logger = createStderrLogger(config.log.level);
  const db = createDb({ url: config.db.url, logger: quietConnectionLogger(logger), lockWaitTimeoutSeconds: config.db.lock_wait_timeout });
  try {
    const applied = await migrate(db, logger);
    process.stdout.write(`${JSON.stringify({ applied })}\n`);
  } finally {
    await db.destroy();
  }
}
