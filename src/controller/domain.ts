import type { Knex } from 'knex';
import type { Config } from '../config/schema.js';
import type { Logger } from '../log/logger.js';
import { RepeatedFailure } from '../log/repeated.js';
import type { MetricsRegistry } from '../metrics/registry.js';
import { AccessGrantService } from '../auth/access-grants.js';
import { UserService } from '../auth/users.js';
import { AuditLog } from '../queue/audit.js';
import { Catalog } from '../queue/catalog.js';
import { ConsumerGroupService } from '../queue/consumer-groups.js';
import { TopicService } from '../queue/topics.js';
import { TopicSignals } from '../queue/topic-signals.js';
import { DeleteSchedule } from '../reapers/delete-schedule.js';
import { createDb, migrate, ping } from '../store/db.js';
import { DatabaseUnavailable } from '../store/errors.js';
import type { ControllerDomain } from './kinds/kind.js';

export interface DomainRuntime extends ControllerDomain {
  db: Knex;
  deleteSchedule: DeleteSchedule;
  close(): Promise<void>;
}

/** The same database, migrations and domain services as `conveyor serve`, without any transport. */
async function openDomain(config: Config, logger: Logger, metrics: MetricsRegistry, connectionFailures: RepeatedFailure): Promise<DomainRuntime> {
  const db = createDb({ url: config.db.url, poolSize: Math.min(config.db.pool_size, 4), logger, connectionFailures, lockWaitTimeoutSeconds: config.db.lock_wait_timeout });
  try {
    await migrate(db, logger);
    const catalog = new Catalog(db, config.queue.config_refresh_interval, logger);
    await catalog.start();
    return {
      db,
      topics: new TopicService({ db, catalog, metrics }),
      consumerGroups: new ConsumerGroupService({ db, catalog, signals: new TopicSignals() }),
      // No principal cache in this process: the API instances re-read a principal within PRINCIPAL_CACHE_MS.
      access: new AccessGrantService(db, new UserService(db, Date.now, () => {})),
      deleteSchedule: new DeleteSchedule(db, config.queue.delete_reaper_schedule),
      audit: new AuditLog({ db, logger }),
      close: async () => {
        catalog.stop();
        await db.destroy();
      },
    };
  } catch (err) {
    await db.destroy().catch(() => {});
    throw err;
  }
}

/**
 * Connects in the background and keeps trying (capped backoff), so a controller started while the database
 * is down runs anyway: its resources report DatabaseError until the connection comes.
 */
export class DomainConnection {
  private runtime: DomainRuntime | undefined;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  /** Ends the wait before the next attempt (close() must not wait for a timer it cleared). */
  private wake: (() => void) | undefined;
  private connecting: Promise<void> | undefined;
  /** Failures to connect, shared by the pools of successive attempts: one line, a count every 30 s, "recovered". */
  private readonly connectionFailures: RepeatedFailure;
  /** Anything else that stops the set-up (a migration refused, say), with the same rhythm. */
  private readonly setupFailures: RepeatedFailure;

  constructor(
    private readonly config: Config,
    private readonly logger: Logger,
    private readonly metrics: MetricsRegistry,
    private readonly onConnected: () => void,
  ) {
    this.connectionFailures = new RepeatedFailure(logger, { what: 'database connection', consequence: 'retrying; resources report DatabaseError meanwhile' });
    this.setupFailures = new RepeatedFailure(logger, { what: 'controller database set-up', consequence: 'retrying; resources report DatabaseError meanwhile' });
  }

  get current(): DomainRuntime | undefined {
    return this.runtime;
  }

  start(): void {
    this.connecting = this.connect(0);
  }

  /** Whether the database answers right now (for /readyz). */
  async healthy(timeoutMs: number): Promise<boolean> {
    if (!this.runtime) return false;
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), timeoutMs).unref());
    return Promise.race([ping(this.runtime.db), timeout]).then(
      () => true,
      () => false,
    );
  }

  async close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.wake?.();
    await this.connecting;
    await this.runtime?.close();
  }

  private async connect(failures: number): Promise<void> {
    if (this.stopped) return;
    try {
      this.runtime = await openDomain(this.config, this.logger, this.metrics, this.connectionFailures);
      this.setupFailures.ok();
      this.onConnected();
    } catch (err) {
      const delay = Math.min(1000 * 2 ** failures, 30_000);
      // A connection that could not be opened is already counted: knex reports it to connectionFailures.
      if (!(err instanceof DatabaseUnavailable) && !this.connectionFailures.failing) this.setupFailures.fail(err);
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        this.timer = setTimeout(resolve, delay);
      });
      this.wake = undefined;
      return this.connect(failures + 1);
    }
  }
}
