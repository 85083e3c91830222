import { loadConfig } from '../config/load.js';
import { routeConsoleToLogger } from '../log/console.js';
import { createLogger } from '../log/logger.js';
import { applyServeGcPolicy } from './gc-policy.js';
import { assertOpenableDbUrl } from './db-url.js';
import { CONFIG_OPTION, HELP_OPTION, type CommandHelp } from './help.js';
import { trapSignals } from './signals.js';

export const serveHelp: CommandHelp = {
  name: 'serve',
  synopsis: 'conveyor serve [--config FILE]',
  summary: 'run the HTTP API and gRPC service (the default command)',
  description: `Applies pending database migrations, then serves the HTTP API, gRPC and (with metrics.port) a separate
/metrics listener until SIGTERM or SIGINT, when it finishes in-flight requests and exits 0. A signal during
start-up lets start-up finish (a migration is never cut short), then stops the same way and logs "conveyor
stopped during start-up". Logs are JSON lines on stdout; the line "conveyor listening" names the version,
the database, the ports, whether authentication is on, whether TLS is ("tls": "off", "on" or "mutual") and
the reaper mode.`,
  options: [CONFIG_OPTION, HELP_OPTION],
  config: ['server.*', 'db.*', 'queue.*', 'reapers.*', 'auth.*', 'redis.*', 'metrics.*', 'log.*', 'audit.*'],
  exitCodes: '0 after a graceful shutdown; 2 for an invalid configuration; 1 when it cannot start (database unreachable, port taken).',
};

export async function serve(configPath: string | undefined): Promise<void> {
  applyServeGcPolicy();
  const config = loadConfig({ configPath });
  await assertOpenableDbUrl(config.db.url);
  const logger = createLogger(config.log.level);
  routeConsoleToLogger(logger);
  const signals = trapSignals(logger);
  // Loaded only here, so `--help`, `version` and `config check` do not pay for the whole service.
  const { startServer } = await import('../server.js');
  // Stopped while loading: nothing is open yet, so the database is never touched.
  if (signals.requested) return signals.closeWith(async () => {});
  // A signal from here on lets start-up finish (a migration cannot stop half-way) and then closes it.
  const server = await startServer(config, { logger });
  signals.closeWith(() => server.close());
}
