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
start-up ends a wait for another process's migrations, or else lets start-up finish (a migration is never
cut short), then stops the same way, logs "conveyor stopped during start-up" and exits 0. Logs are JSON
lines on stdout; the line "conveyor listening" names the version, the database, the ports, whether
authentication is on, whether TLS is ("tls": "off", "on" or "mutual") and the reaper mode.`,
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
  // A signal from here on ends a wait for another pod's migrations, or else lets start-up finish (a migration
  // cannot stop half-way), and then closes what it opened.
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    server = await startServer(config, { logger, signal: signals.stopping });
  } catch (err) {
    if (!signals.requested) throw err;
    // Asked to stop: a start-up that ended early (or failed on the way) has closed what it opened.
    if (err !== signals.stopping.reason) logger.warn({ err }, 'start-up failed after the process was asked to stop');
    return signals.closeWith(async () => {});
  }
  signals.closeWith(() => server.close());
}
