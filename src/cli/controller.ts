import { loadConfig } from '../config/load.js';
import { routeConsoleToLogger } from '../log/console.js';
import { createLogger } from '../log/logger.js';
import { assertOpenableDbUrl } from './db-url.js';
import { CONFIG_OPTION, HELP_OPTION, type CommandHelp } from './help.js';
import { exitOnSignal } from './signals.js';

export const controllerHelp: CommandHelp = {
  name: 'controller',
  synopsis: 'conveyor controller [--config FILE]',
  summary: 'run the Kubernetes controller (TopicConfig, TopicSchema, ConsumerGroup resources)',
  description: `Turns TopicConfig, TopicSchema and ConsumerGroup resources (group conveyor.dev/v1alpha1) into topic
configuration, schemas and consumer groups in the database, and keeps the delete-reaper CronJob's schedule
equal to the stored one. Only the replica holding the leader Lease writes. Serves /healthz, /readyz and
/metrics on controller.port. Uses the same database as conveyor serve; started while the database is down,
it keeps retrying and its resources report DatabaseError meanwhile.`,
  options: [CONFIG_OPTION, HELP_OPTION],
  config: ['controller.*', 'db.url', 'db.url_file', 'db.pool_size', 'db.lock_wait_timeout', 'queue.config_refresh_interval', 'queue.delete_reaper_schedule', 'log.level'],
  environment: [['KUBECONFIG', 'kubeconfig file when not running in a cluster (else ~/.kube/config); in a pod, the service account']],
  exitCodes: '0 after a graceful shutdown; 2 for an invalid configuration; 1 when it cannot start.',
};

export async function controller(configPath: string | undefined): Promise<void> {
  const config = loadConfig({ configPath });
  // A database it waits for is a matter of time; one no engine can open is a configuration error.
  await assertOpenableDbUrl(config.db.url);
  const logger = createLogger(config.log.level);
  routeConsoleToLogger(logger);
  const { startController } = await import('../controller/controller.js');
  const running = await startController(config, { logger });
  exitOnSignal(logger, () => running.close());
}
