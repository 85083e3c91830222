import type { Config } from '../config/schema.js';
import { createLogger, type Logger } from '../log/logger.js';
import { noopQueueMetrics } from '../queue/metrics-port.js';
import { startDatabaseClock } from '../store/database-clock.js';
import { createDb, ping } from '../store/db.js';
import { driverErrorOf } from '../store/errors.js';
import { REAPER_KINDS, Reapers, reapReport, type ReapResult, type ReaperKind } from './reapers.js';

/** How long a one-shot run waits for a run on another instance (an API pod, another CronJob) to finish. */
const WAIT_FOR_OTHER_RUN_MS = 60_000;

export class ReapCommandError extends Error {}

export function parseReaperKind(value: string | undefined): ReaperKind {
  if (!value || !(REAPER_KINDS as readonly string[]).includes(value)) {
    throw new ReapCommandError(`reap needs one of ${REAPER_KINDS.join(', ')}${value ? `, not "${value}"` : ''}`);
  }
  return value as ReaperKind;
}

/**
 * `conveyor reap expiry|delete|archive`: one run (for Kubernetes CronJobs), one JSON line on stdout such as
 * {"reaper":"expiry","expired":3} or {"reaper":"archive","deleted":0,"audit_deleted":2}. Failures throw with
 * one readable sentence; the CLI exits non-zero.
 */
export async function reapOnce(config: Config, kind: ReaperKind, logger: Logger = createLogger('error')): Promise<string> {
  let db: ReturnType<typeof createDb>;
  try {
    // A failed connection is this command's own one-line report; the CLI passes a logger at error level or above.
    db = createDb({ url: config.db.url, poolSize: 2, logger, lockWaitTimeoutSeconds: config.db.lock_wait_timeout });
  } catch (err) {
    throw new ReapCommandError(`reap ${kind}: cannot open the database: ${(err as Error).message}`);
  }
  try {
    try {
      await ping(db);
    } catch (err) {
      throw new ReapCommandError(`reap ${kind}: cannot reach the database: ${(driverErrorOf(err) as Error).message}`);
    }
    // The leases table came last: a run needs it for its lease (src/store/leases.ts).
    if (!(await db.schema.hasTable('leases'))) {
      throw new ReapCommandError(`reap ${kind}: the database has no (or an older) conveyor schema; run \`conveyor migrate\` first`);
    }
    let result: ReapResult;
    try {
      // The CronJob's pod may run on a node whose clock is off: TTLs and visibility end in the database's time.
      const clock = await startDatabaseClock(db, logger);
      clock.stop();
      const reapers = new Reapers({ db, metrics: noopQueueMetrics, auditRetentionDays: config.audit.retention_days, logger, attempts: config.queue, now: clock.now });
      result = await reapers.run(kind, WAIT_FOR_OTHER_RUN_MS);
    } catch (err) {
      throw new ReapCommandError(`reap ${kind} failed: ${(driverErrorOf(err) as Error).message}`);
    }
    return JSON.stringify({ reaper: kind, ...reapReport(kind, result) });
  } finally {
    await db.destroy();
  }
}
