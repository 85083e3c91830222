#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config/load.js';
import { createLogger } from './log/logger.js';
import { startServer } from './server.js';
import { createDb, migrate } from './store/db.js';
import { parseReaperKind, reapOnce } from './reapers/reap-command.js';
import { VERSION } from './version.js';

const USAGE = `usage: conveyor [serve|migrate|reap <expiry|delete|archive>] [--config conveyor.yaml]

  serve      run the HTTP API and gRPC (default)
  migrate    apply database migrations and exit
  reap KIND  run one reaper once (expiry, delete or archive), print {"reaper":KIND,...count} and exit

Configuration: conveyor.yaml (or --config / CONVEYOR_CONFIG) and CONVEYOR_<SECTION>_<KEY> variables.`;

async function serve(configPath: string | undefined): Promise<void> {
  const config = loadConfig({ configPath });
  const logger = createLogger(config.log.level);
  const server = await startServer(config, { logger });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    server.close().then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

async function runMigrations(configPath: string | undefined): Promise<void> {
  const config = loadConfig({ configPath });
  const db = createDb({ url: config.db.url });
  try {
    const applied = await migrate(db);
    process.stdout.write(`${JSON.stringify({ applied })}\n`);
  } finally {
    await db.destroy();
  }
}

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { config: { type: 'string' }, help: { type: 'boolean', short: 'h' }, version: { type: 'boolean' } },
  });
  if (values.help) return void process.stdout.write(`${USAGE}\n`);
  if (values.version) return void process.stdout.write(`${VERSION}\n`);
  const [command = 'serve'] = positionals;
  if (command === 'serve') return serve(values.config);
  if (command === 'migrate') return runMigrations(values.config);
  if (command === 'reap') return reap(values.config, positionals[1]);
  throw new UsageError(`unknown command "${command}"`);
}

class UsageError extends Error {}

async function reap(configPath: string | undefined, kindArg: string | undefined): Promise<void> {
  let kind;
  try {
    kind = parseReaperKind(kindArg);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const line = await reapOnce(loadConfig({ configPath }), kind);
  process.stdout.write(`${line}\n`);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`conveyor: ${err.message}\n`);
    process.exit(2);
  }
  if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    process.stderr.write(`conveyor: ${(err as Error).message}\n${USAGE}\n`);
    process.exit(2);
  }
  process.stderr.write(`conveyor: ${(err as Error).message ?? String(err)}\n`);
  process.exit(1);
});
