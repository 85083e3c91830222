import type { Knex } from 'knex';
import type { Config } from './config/schema.js';
import type { Logger } from './log/logger.js';
import type { MetricsRegistry } from './metrics/registry.js';
import { ReaperMetrics } from './metrics/reaper-metrics.js';
import { ArchiveService } from './queue/archive.js';
import { AuditLog } from './queue/audit.js';
import type { AttemptsObserver } from './queue/attempts-observer.js';
import type { Catalog } from './queue/catalog.js';
import { ConsumerGroupService } from './queue/consumer-groups.js';
import type { MessageService } from './queue/messages.js';
import type { TopicSignals } from './queue/topic-signals.js';
import { DeleteSchedule } from './reapers/delete-schedule.js';
import { Reapers } from './reapers/reapers.js';
import { ReaperScheduler } from './reapers/scheduler.js';

/** Consumer groups, the archive log and replay, the reapers and the audit log: what the HTTP (and gRPC) layers call. */
export interface Maintenance {
  consumerGroups: ConsumerGroupService;
  archive: ArchiveService;
  reapers: Reapers;
  deleteSchedule: DeleteSchedule;
  audit: AuditLog;
  /** Stops the in-process reapers, waiting for a run in progress. */
  stop(): Promise<void>;
}

export interface MaintenanceDeps {
  config: Config;
  db: Knex;
  logger: Logger;
  catalog: Catalog;
  messages: MessageService;
  metrics: MetricsRegistry;
  signals: TopicSignals;
  now?: () => number;
  /** The expiry reaper's released messages, for their spans (tracing, when on). */
  attemptsObserver?: AttemptsObserver;
}

/** Builds the services and, unless reapers.mode is external, starts the in-process reapers. */
export async function startMaintenance(deps: MaintenanceDeps): Promise<Maintenance> {
  const { config, db, logger, catalog, metrics, now } = deps;
  const reapers = new Reapers({
    db,
    metrics,
    runs: new ReaperMetrics(metrics.meter),
    now,
    auditRetentionDays: config.audit.retention_days,
    logger,
    attempts: config.queue,
    signals: deps.signals,
    attemptsObserver: deps.attemptsObserver,
  });
  let scheduler: ReaperScheduler | undefined;
  const deleteSchedule = new DeleteSchedule(db, config.queue.delete_reaper_schedule, async () => scheduler?.refresh());
  if (config.reapers.mode === 'in-process') {
    scheduler = new ReaperScheduler({
      reapers,
      schedule: deleteSchedule,
      logger,
      expiryIntervalSeconds: config.queue.expiry_reaper_interval,
      archiveIntervalSeconds: config.queue.archive_reaper_interval,
    });
    await scheduler.start();
    // A PUT on any instance bumps the catalog revision; every instance's catalog poll then lands here.
    catalog.onChange(() => void scheduler?.refresh());
  }
  return {
    consumerGroups: new ConsumerGroupService({ db, catalog, signals: deps.signals, now }),
    archive: new ArchiveService({ db, catalog, messages: deps.messages, metrics, now }),
    reapers,
    deleteSchedule,
    audit: new AuditLog({ db, logger, now }),
    stop: async () => {
      reapers.stop();
      await scheduler?.stop();
    },
  };
}
