#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config/load.js';
import { createLogger } from './log/logger.js';
import { startServer } from './server.js';
import { startController } from './controller/controller.js';
import { createDb, migrate } from './store/db.js';
import { parseReaperKind, reapOnce } from './reapers/reap-command.js';
import { VERSION } from './version.js';

const USAGE = `usage: conveyor [serve|controller|migrate|reap <expiry|delete|archive>] [--config conveyor.yaml]

  serve      run the HTTP API and gRPC (default)
  controller run the Kubernetes controller (conveyor controller --help)
  migrate    apply database migrations and exit
  reap KIND  run one reaper once (expiry, delete or archive), print {"reaper":KIND,...count} and exit

Configuration: conveyor.yaml (or --config / CONVEYOR_CONFIG) and CONVEYOR_<SECTION>_<KEY> variables.`;

const CONTROLLER_USAGE = `usage: conveyor controller [--config conveyor.yaml]

Turns TopicConfig, TopicSchema and ConsumerGroup resources (group conveyor.dev/v1alpha1) into topic
configuration, schemas and consumer groups in the database, and keeps the delete-reaper CronJob's schedule
equal to the stored one. Only the replica holding the leader Lease writes.

Kubernetes: in-cluster service account, else KUBECONFIG or ~/.kube/config.
Database: the same db.url as conveyor serve (CONVEYOR_DB_URL).

Configuration (conveyor.yaml key, environment variable, default):
  controller.namespaces              CONVEYOR_CONTROLLER_NAMESPACES              ""  (comma-separated; "" = all)
  controller.namespace               CONVEYOR_CONTROLLER_NAMESPACE               ""  (Lease and CronJob namespace; "" = the pod's own, else default)
  controller.resync_period           CONVEYOR_CONTROLLER_RESYNC_PERIOD           60s (drift in the database is repaired within it)
  controller.lease_name              CONVEYOR_CONTROLLER_LEASE_NAME              conveyor-controller
  controller.lease_duration          CONVEYOR_CONTROLLER_LEASE_DURATION          15s
  controller.renew_deadline          CONVEYOR_CONTROLLER_RENEW_DEADLINE          10s
  controller.retry_period            CONVEYOR_CONTROLLER_RETRY_PERIOD            2s
  controller.delete_reaper_cronjob   CONVEYOR_CONTROLLER_DELETE_REAPER_CRONJOB   ""  (CronJob name; "" = do not sync)
  controller.schedule_sync_interval  CONVEYOR_CONTROLLER_SCHEDULE_SYNC_INTERVAL  5s
  controller.watch_timeout           CONVEYOR_CONTROLLER_WATCH_TIMEOUT           5m  (a watch silent this long is restarted)
  controller.port                    CONVEYOR_CONTROLLER_PORT                    8081 (/healthz, /readyz, /metrics)
  controller.host                    CONVEYOR_CONTROLLER_HOST                    0.0.0.0`;

/** Runs until SIGTERM or SIGINT, then closes gracefully and exits 0 (1 when closing failed). */
function exitOnSignal(logger: ReturnType<typeof createLogger>, close: () => Promise<void>): void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    close().then(
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

async function serve(configPath: string | undefined): Promise<void> {
  const config = loadConfig({ configPath });
  const logger = createLogger(config.log.level);
  const server = await startServer(config, { logger });
  exitOnSignal(logger, () => server.close());
}

async function controller(configPath: string | undefined): Promise<void> {
  const config = loadConfig({ configPath });
  const logger = createLogger(config.log.level);
  const running = await startController(config, { logger });
  exitOnSignal(logger, () => running.close());
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
  const [command = 'serve'] = positionals;
  if (values.help) return void process.stdout.write(`${command === 'controller' ? CONTROLLER_USAGE : USAGE}\n`);
  if (values.version) return void process.stdout.write(`${VERSION}\n`);
  if (command === 'serve') return serve(values.config);
  if (command === 'controller') return controller(values.config);
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
