import { loadConfig } from '../config/load.js';
import { createStderrLogger } from '../log/logger.js';
import { assertOpenableDbUrl } from './db-url.js';
import { CONFIG_OPTION, HELP_OPTION, type CommandHelp } from './help.js';
import { quietConnectionLogger } from './one-shot.js';

export const reapHelp: CommandHelp = {
  name: 'reap',
  synopsis: 'conveyor reap <expiry|delete|archive> [--config FILE]',
  summary: 'run one reaper once and exit (for Kubernetes CronJobs; reapers.mode: external)',
  description: `Runs one reaper once and prints one JSON line on stdout, e.g. {"reaper":"expiry","expired":3}:
  expiry   marks pending messages (and group deliveries) whose TTL passed as expired, and returns
           processing ones whose visibility timeout passed (a failed attempt: retried, dead-lettered
           or failed, as a dequeue would; not counted in "expired")
  delete   deletes expired messages
  archive  deletes archive-log entries older than each replayable topic's window, and audit records
           older than audit.retention_days ({"reaper":"archive","deleted":0,"audit_deleted":2})
A run holds a cross-instance lock; when another run holds it, this one waits up to 60 s and then does what
is left. It expects a migrated database (conveyor migrate).`,
  options: [CONFIG_OPTION, HELP_OPTION],
  config: ['db.url', 'db.url_file', 'db.lock_wait_timeout', 'queue.dlq_threshold', 'audit.retention_days', 'log.level'],
  exitCodes: '0 after the run; 2 for an unknown reaper or an invalid configuration; 1 when the run fails (one line on stderr).',
};

export class ReapUsageError extends Error {}

export async function reap(configPath: string | undefined, kindArg: string | undefined): Promise<void> {
  const { parseReaperKind, reapOnce } = await import('../reapers/reap-command.js');
  let kind;
  try {
    kind = parseReaperKind(kindArg);
  } catch (err) {
    throw new ReapUsageError((err as Error).message);
  }
  const config = loadConfig({ configPath });
  await assertOpenableDbUrl(config.db.url);
  const line = await reapOnce(config, kind, quietConnectionLogger(createStderrLogger(config.log.level)));
  process.stdout.write(`${line}\n`);
}
